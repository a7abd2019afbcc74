"""Checks a codec errors file of ptrain-interpret --codec-errors (CodecErrors.h) against what the codecs
guarantee on any data, so that the test fails when the probe measures the wrong thing:
  - every figure is finite and >= 0; casts are below their unit roundoff (2^-8 bf16, 2^-11 fp16) and fp16 < bf16;
  - quantization without error feedback: 8 < 4 < 2 bits (each bit width halves the step);
  - PowerSGD without error feedback: error falls with the rank, and a rank of min(n, m) is exact (< 1e-5);
  - top-k without error feedback: keeping 30% is better than 10% and both are below 1.
Prints one line per site and exits 1 with the violated rule."""
import json
import sys

f = json.load(open(sys.argv[1]))
assert f["schema"] == "ptrain-codec-errors" and f["version"] == 1, f
fail = []
for site in f["sites"]:
    name = "%s boundary %d" % (site["direction"], site["boundary"])
    e = {(x["codec"], x["error_feedback"]): x["error"] for x in site["errors"]}
    def get(codec, ef=False):
        if (codec, ef) not in e:
            fail.append("%s: no figure for %s ef=%s" % (name, codec, ef))
            return float("nan")
        return e[(codec, ef)]
    for (codec, ef), v in e.items():
        if not (v >= 0 and v < 10):
            fail.append("%s: %s ef=%s: %r" % (name, codec, ef, v))
    f16, bf16 = get("#ptrain.cast<f16>"), get("#ptrain.cast<bf16>")
    if not (0 < f16 < 2 ** -11 and f16 < bf16 < 2 ** -8):
        fail.append("%s: casts fp16 %g bf16 %g" % (name, f16, bf16))
    q8, q4, q2 = (get("#ptrain.quant<bits = %d>" % b) for b in (8, 4, 2))
    if not (0 < q8 < q4 < q2):
        fail.append("%s: quantization 8/4/2 bits %g %g %g" % (name, q8, q4, q2))
    t30, t10 = get("#ptrain.topk<ratio = 3.000000e-01 : f64>"), get("#ptrain.topk<ratio = 1.000000e-01 : f64>")
    if not (0 < t30 < t10 < 1):
        fail.append("%s: top-k 30%% %g 10%% %g" % (name, t30, t10))
    ranks = sorted(int(c.split("rank = ")[1].split(">")[0]) for c, ef in e if c.startswith("#ptrain.powersgd") and not ef)
    errs = [get("#ptrain.powersgd<rank = %d>" % r) for r in ranks]
    if len(ranks) < 2 or any(b > a + 1e-6 for a, b in zip(errs, errs[1:])) or errs[0] <= errs[-1]:
        fail.append("%s: PowerSGD errors do not fall with the rank: %s %s" % (name, ranks, errs))
    full = site["shape"][-1]  # the matrix view's m (the last dimension) is the smaller side here
    if ranks and ranks[-1] == full and errs[-1] > 1e-4:
        fail.append("%s: PowerSGD at full rank %d is not exact: %g" % (name, full, errs[-1]))
    print("%s: %d figures, messages %d, quant 8/4/2 %.4f %.4f %.4f, powersgd ranks %s" %
          (name, len(e), site["messages"], q8, q4, q2, ranks))
if fail:
    print("\n".join(fail))
    sys.exit(1)
