#!/usr/bin/python3
"""PyTorch's side of bench/pytorch's profile: torch.autograd.profiler over the same training steps as
tokens_per_s.py (same model, weights, data, AdamW and micro-batches; one thread), ops by self CPU time.

    PYTHONPATH=python /usr/bin/python3 bench/pytorch/torch_profile.py [--steps 8] [--rows 25] [--core 1] [--shapes]

--shapes records the operands' shapes and prints the GEMMs (aten::mm, addmm, bmm) by input shape as well, the
counterpart of kernel_times.py's table by GEMM shape.

The profiler's times are wall-clock (on a loaded machine they include the wait for the core); compare its
shares, not its milliseconds, with bench/pytorch/kernel_times.py's CPU times of the compiled step.
"""

import argparse
import os
import sys


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--rows", type=int, default=25)
    p.add_argument("--core", type=int, default=1)
    p.add_argument("--shapes", action="store_true", help="also the GEMMs by input shape")
    args = p.parse_args(argv)
    import tokens_per_s as bench  # beside this script, on sys.path as its folder
    opts = bench.parser().parse_args(["--steps", str(max(args.steps, 3)), "--warmup", "0", "--core", str(args.core)])
    bench.pin(opts)  # one thread, one core, before torch loads
    import torch
    from ptrain.run_data import data_files, read_data
    cfg, rows, weights = bench.read_config(opts.model_dir)
    data = os.path.join(opts.out, "data")
    if not os.path.isfile(os.path.join(data, "train.bin")):
        print(f"bench/pytorch/torch_profile: error: no {data}/train.bin (run tokens_per_s.py once)", file=sys.stderr)
        return 1
    train, _ = read_data(*data_files(data), cfg.seq_len)
    with torch.autograd.profiler.profile(record_shapes=args.shapes) as prof:
        bench.pytorch_run(opts, cfg, rows, weights, train)
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=args.rows))
    if args.shapes:
        gemms = [e for e in prof.key_averages(group_by_input_shape=True) if e.key in ("aten::mm", "aten::addmm", "aten::bmm")]
        gemms.sort(key=lambda e: -e.self_cpu_time_total)
        total = sum(e.self_cpu_time_total for e in gemms)
        print("| op | input shapes | calls | self CPU ms | share of GEMMs |\n|---|---|---|---|---|")
        for e in gemms:
            print(f"| {e.key} | {e.input_shapes} | {e.count} | {e.self_cpu_time_total / 1e3:.2f} | "
                  f"{100 * e.self_cpu_time_total / total:.1f}% |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
