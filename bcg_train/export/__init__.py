"""Export trained policies as self-contained ONNX files."""
