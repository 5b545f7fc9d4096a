"""Benchmarks of the differentiable simulator (CLIs, not timed tests)."""
