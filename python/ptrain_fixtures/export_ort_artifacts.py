#!/usr/bin/env python3
"""onnxruntime's training artifacts of a TorchScript GPT-2 export (issue 21 item 1: the requires_grad list).

onnxruntime.training.artifacts.generate_artifacts(model, requires_grad=[...], frozen_params=[...]) writes
training_model.onnx (the forward, the loss and the gradient graph: every parameter a graph input without a
value, and for each parameter of requires_grad an input `<name>_grad.accumulation.buffer` and an output
`<name>_grad.accumulation.out`), eval_model.onnx, optimizer_model.onnx and checkpoint (the values). ptrain reads
the list from training_model.onnx (`--ort-training-model`) and imports the forward export itself.

Not part of the project's environments: onnxruntime-training 1.19.2 (PyPI, 299 MB, the last release, cp311)
imports torch at package import but generate_artifacts never calls it, so a stand-in module is put first on
sys.path (made here in a temporary folder). In a throw-away venv:
    python3.11 -m venv /tmp/ortvenv && /tmp/ortvenv/bin/pip install onnxruntime-training==1.19.2 onnx==1.16.2 'numpy<2'
    /tmp/ortvenv/bin/python python/ptrain_fixtures/export_ort_artifacts.py
The requires_grad list is every float initializer but the position table (`transformer.wpe.weight`, held
frozen: the case the list decides), of test/Import/ONNX/Inputs/exports/gpt2-opset14.onnx. Writes
test/Import/ONNX/Inputs/ort-artifacts/gpt2-opset14-training_model.onnx (the other artifacts are not needed).
"""
import argparse
import os
import shutil
import sys
import tempfile

STUB = '''import sys, types
class _Any(type):
    def __getattr__(cls, name):
        return _Any(name, (), {})
    def __call__(cls, *a, **k):
        return _Any("x", (), {})
class _Mod(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Any(name, (), {})
sys.modules[__name__].__class__ = _Mod
__version__ = "0.0"
'''


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    p = argparse.ArgumentParser()
    p.add_argument("--model", default=os.path.join(root, "test/Import/ONNX/Inputs/exports/gpt2-opset14.onnx"))
    p.add_argument("--out", default=os.path.join(root, "test/Import/ONNX/Inputs/ort-artifacts"))
    args = p.parse_args()
    stub = tempfile.mkdtemp()
    os.makedirs(os.path.join(stub, "torch"))
    with open(os.path.join(stub, "torch", "__init__.py"), "w") as f:
        f.write(STUB)
    sys.path.insert(0, stub)
    import onnx
    from onnxruntime.training import artifacts

    model = onnx.load(args.model)
    floats = [t.name for t in model.graph.initializer if t.data_type == onnx.TensorProto.FLOAT]
    frozen = [n for n in floats if n == "transformer.wpe.weight"]
    requires_grad = [n for n in floats if n not in frozen]
    work = tempfile.mkdtemp()
    artifacts.generate_artifacts(model, requires_grad=requires_grad, frozen_params=frozen,
                                 loss=artifacts.LossType.CrossEntropyLoss, optimizer=artifacts.OptimType.AdamW,
                                 artifact_directory=work)
    os.makedirs(args.out, exist_ok=True)
    name = os.path.splitext(os.path.basename(args.model))[0] + "-training_model.onnx"
    shutil.copy(os.path.join(work, "training_model.onnx"), os.path.join(args.out, name))
    print(f"{len(requires_grad)} requires_grad, frozen {frozen}: {os.path.join(args.out, name)}")
    shutil.rmtree(work)
    shutil.rmtree(stub)


if __name__ == "__main__":
    main()
