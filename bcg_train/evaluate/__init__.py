"""Sim-to-sim evaluation of exported ONNX policies in plain MuJoCo."""
