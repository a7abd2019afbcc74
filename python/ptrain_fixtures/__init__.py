"""The generators of ptrain's committed test inputs and reference models (python/README.md): the PyTorch models
(models/), their ONNX exports with reference outputs, the opset 18-23 fixtures, the Hugging Face exports, MiniLM,
and the GPT-shaped MLIR of the timing benchmarks. Not part of the installed package (python/pyproject.toml): the
tools never import it. Run from the repository root as `PYTHONPATH=python python3 -m ptrain_fixtures.<name>`."""
