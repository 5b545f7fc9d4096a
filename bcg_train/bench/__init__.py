"""Benchmarks of the differentiable simulator: measurements that print figures (CLIs in :mod:`bcg_train.cli`)."""
