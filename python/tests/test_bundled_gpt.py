"""Checks of the committed models/gpt/ against the PyTorch model. Skipped without torch and onnx
(Debian: python3-torch python3-onnx)."""

import os

import pytest

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")
np = pytest.importorskip("numpy")
from onnx import numpy_helper

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODEL_DIR = os.path.join(ROOT, "models", "gpt")
from ptrain_fixtures.models.gpt import GPT, GPTConfig, next_token_loss


def _pb(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t).copy()


@pytest.fixture(scope="module")
def ref():
    ids = _pb(os.path.join(MODEL_DIR, "test_data_set_0", "input_0.pb"))
    logits = _pb(os.path.join(MODEL_DIR, "test_data_set_0", "output_0.pb"))
    grads = {
        t.name: numpy_helper.to_array(t)
        for t in onnx.load(os.path.join(MODEL_DIR, "reference_grads.onnx")).graph.initializer
    }
    with open(os.path.join(MODEL_DIR, "reference_loss.txt")) as f:
        loss = float(f.read())
    return ids, logits, grads, loss


def test_graph_structure():
    path = os.path.join(MODEL_DIR, "gpt.onnx")
    assert os.path.getsize(path) < 1 << 20
    m = onnx.load(path, load_external_data=False)
    assert [o.version for o in m.opset_import if o.domain in ("", "ai.onnx")] == [17]
    names = [t.name for t in m.graph.initializer]
    assert len(names) == len(set(names))
    assert sorted(names) == sorted(n for n, _ in GPT().named_parameters())
    assert all(t.data_location == onnx.TensorProto.EXTERNAL for t in m.graph.initializer)
    # The tie: wte.weight feeds the embedding Gather and the LM head's Transpose -> MatMul.
    users = [n for n in m.graph.node if "wte.weight" in n.input]
    assert sorted(n.op_type for n in users) == ["Gather", "Transpose"]
    (tr,) = [n for n in users if n.op_type == "Transpose"]
    consumers = [n.op_type for n in m.graph.node if tr.output[0] in n.input]
    assert consumers == ["MatMul"]
    assert [n.op_type for n in m.graph.node].count("LayerNormalization") == 9
    (inp,) = m.graph.input
    assert inp.name == "input_ids" and inp.type.tensor_type.elem_type == onnx.TensorProto.INT64
    assert [d.dim_value for d in inp.type.tensor_type.shape.dim] == [4, 64]


def test_model_reproduces_reference(ref):
    ids, logits, grads, loss = ref
    torch.manual_seed(1234)  # init must not depend on the global RNG
    model = GPT(GPTConfig(), seed=0)
    out = model(torch.from_numpy(ids))
    np.testing.assert_allclose(out.detach().numpy(), logits, atol=1e-5, rtol=0)
    lv = next_token_loss(out, torch.from_numpy(ids))
    assert lv.item() == pytest.approx(loss, abs=1e-6)
    lv.backward()
    for name, p in model.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), grads[name], atol=1e-6, rtol=1e-4)


def test_reference_grads_finite_difference(ref):
    ids, _, grads, _ = ref
    model = GPT(GPTConfig(), seed=0).double()
    params = dict(model.named_parameters())
    x = torch.from_numpy(ids)
    eps = 1e-6
    cases = [("wte.weight", (int(ids[0, 5]), 34)), ("wte.weight", (200, 7)),
             ("wpe.weight", (11, 104)), ("blocks.0.ln_1.bias", (64,)),
             ("blocks.3.attn.qkv.weight", (280, 80)), ("blocks.2.mlp.proj.bias", (104,)),
             ("ln_f.weight", (50,))]
    with torch.no_grad():
        for name, idx in cases:
            p = params[name]
            old = p[idx].item()
            p[idx] = old + eps
            lp = next_token_loss(model(x), x).item()
            p[idx] = old - eps
            lm = next_token_loss(model(x), x).item()
            p[idx] = old
            assert (lp - lm) / (2 * eps) == pytest.approx(float(grads[name][idx]), abs=1e-7)
