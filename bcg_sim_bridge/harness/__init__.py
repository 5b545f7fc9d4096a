"""Test and benchmark support: run the deployment's processes against the sim bridge and watch them.

The sim bridge is the one simulated robot of the repository (the node's tests, the
benchmarks and ``bcg-sim2sim`` all talk to it), so what drives processes against it
lives next to it: :mod:`.processes` starts and stops them (the one process harness),
:mod:`.observer` is the rclpy node a test or benchmark watches and drives them with, and
:mod:`.sample_policies` writes small ONNX policies. Nothing here is product code; like the
bridge it imports no JAX, so a robot-PC install can run the node benchmark.
"""
