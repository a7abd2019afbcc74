"""ptrain-compile --deterministic-dp's constraints (python/ptrain/compile.py check_deterministic_dp), named before
anything is built; the pass's own errors: test/Transforms/ptrain-build-training-step-deterministic-dp.mlir; the
runs: test/Target/Cpp/deterministic_dp_e2e.py (CTest codegen-cpu-deterministic-dp)."""

import argparse

import pytest

from ptrain import compile as ptrain_compile


def options(**changes):
    args = dict(deterministic_dp=True, dp=2, pp=1, tp=1, micro_batches=2, policy="none", schedule="1f1b",
                ignore_index=None, class_weights=None, linear_ae=None, target="cpu")
    args.update(changes)
    return argparse.Namespace(**args)


def check(args):
    pipeline = args.pp > 1 or args.micro_batches > 1 or args.dp > 1 or args.tp > 1
    ptrain_compile.check_deterministic_dp(args, pipeline)


@pytest.mark.parametrize("dp,micro_batches", [(1, 4), (2, 2), (4, 1), (8, 16)])
def test_powers_of_two_are_accepted(dp, micro_batches):
    check(options(dp=dp, micro_batches=micro_batches))


def test_a_weighted_loss_is_accepted():
    check(options(ignore_index=-100, class_weights="w.txt"))


def test_without_the_flag_nothing_is_checked():
    check(options(deterministic_dp=False, dp=3, policy="optimus-cc", target="cuda"))


@pytest.mark.parametrize("changes,message", [
    (dict(dp=3), r"--deterministic-dp \(--dp 3 --micro-batches 2\): --dp and --micro-batches must be powers of two"),
    (dict(micro_batches=6), r"must be powers of two"),
    (dict(dp=1, micro_batches=1), r"needs a pipeline or parallel step"),
    (dict(policy="optimus-cc"), r"--policy optimus-cc: a codec's error feedback depends on how the micro-batches are "
                                r"split between replicas; use --policy none"),
    (dict(pp=2, schedule="interleaved"), r"--schedule interleaved is not supported"),
    (dict(pp=2, linear_ae=64), r"--linear-ae is not supported"),
    (dict(target="cuda"), r"--target cuda: the CPU target only"),
])
def test_each_constraint_is_named(changes, message):
    with pytest.raises(ptrain_compile.CompileError, match=message):
        check(options(**changes))
