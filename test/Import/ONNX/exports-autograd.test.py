"""exports-autograd.test: ptrain-interpret's loss (result 0) within 1e-4 relative of the reference loss."""
import re
import sys

with open(sys.argv[1]) as f:
    got = float(re.search(r"result 0: tensor<f32>.* value = (\S+)", f.read()).group(1))
with open(sys.argv[2]) as f:
    expected = float(f.read())
rel = abs(got - expected) / abs(expected)
print(f"loss {got} vs PyTorch {expected}: relative {rel:.1e}")
sys.exit(0 if rel <= 1e-4 else 1)
