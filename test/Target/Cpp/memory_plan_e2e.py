#!/usr/bin/env python3
"""CTest codegen-cpu-memory-plan: the planned memory of each rank against what a real run occupies.

    memory_plan_e2e.py BUILD_DIR SOURCE_DIR WORK_DIR

Compiles the bundled GPT (pp = 2, 4 micro-batches of 4 x 64 tokens) with GPipe, 1F1B and interleaved 1F1B
(2 chunks per rank), each with --report on the H200 cluster (ptrain-compile adds --ptrain-memory-plan:
out/memory_plan.json, and the report's memory_plan beside the critical-path model's peak). Trains one step
under mpirun with ptrain-run --memory-log: every rank writes how many bytes of its states and arenas lie on
resident pages at the end (python/ptrain/memory.py). Requires, per rank and schedule:

* the planned states equal the allocated bytes of the state blocks exactly, and the runtime's allocation counter
  (ptrain_allocated_bytes) equals the sum of the blocks the step lists (states, arenas, constants);
* the runtime's allocation counter equals the plan's allocated_bytes exactly, and the emitted shared arena the
  planned temporaries: the plan and the emitter use one storage analysis (include/ptrain/Analysis/
  BufferLiveness.h), kernel scratch included (issue 23: planned bytes = allocated bytes);
* the planned states equal the resident bytes of the state symbols (init writes exactly this rank's states),
  within 8 pages (the neighbours of other stages that share a page);
* the emitted arena of the rank's train step (its static size) equals the planned stash exactly: the emitter
  and the plan use the same intervals and the same greedy-by-size offsets; and its resident bytes are within
  one page of it;
* the resident part of the shared arena is within 1% of the planned temporaries and not above its static size;
* the critical-path model's peak (ModuleCosts.cpp, the report's stages[s].memory.peak_bytes) is within 10%
  of the planned peak (measured: 2.5-7% below: it takes the largest chunk's working set and no fragmentation);
* max_stashed on stage 0 is M = 4 for GPipe, P - s = 2 for 1F1B; 1 on the last stage (FB steps);
* the measured stash difference GPipe - 1F1B on stage 0 equals the planned difference within one page.
Prints a table of planned, analysed and measured peaks (docs/TrainingStep.md, "The memory plan").
"""

import json
import os
import shutil
import subprocess
import sys

build, source, work = sys.argv[1:4]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
PAGE = os.sysconf("SC_PAGE_SIZE")
MiB = 1 << 20


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=540)
    if p.returncode:
        print(p.stdout)
        sys.exit(f"failed (exit {p.returncode}): {' '.join(cmd)}")
    return p.stdout


data = os.path.join(work, "data")
run([sys.executable, os.path.join(source, "python", "ptrain", "data.py"), "--out", data, "--max-bytes", "300000"])

failures = []


def check(ok, what):
    print(("ok  " if ok else "FAIL") + "  " + what)
    if not ok:
        failures.append(what)


SCHEDULES = {"gpipe": [], "1f1b": [], "interleaved": ["--virtual-stages", "2"]}
results = {}
for schedule, extra in SCHEDULES.items():
    out = os.path.join(work, schedule)
    report = os.path.join(work, f"{schedule}-report.json")
    print(run([os.path.join(build, "bin", "ptrain-compile"), os.path.join(source, "models", "gpt", "gpt.onnx"),
               "--pp", "2", "--micro-batches", "4", "--schedule", schedule, *extra, "--report", report,
               "--cluster", os.path.join(source, "clusters", "h200-node.json"), "--target", "cpu", "-o", out]),
          end="")
    mem = os.path.join(work, f"{schedule}-mem")
    run([os.path.join(build, "bin", "ptrain-run"), out, "--data", data, "--steps", "1", "--val-batches", "1",
         "--no-plots", "--memory-log", mem])
    planned = {r["stage"]: r for r in json.load(open(report))["memory_plan"]}
    measured = {}
    for rank in range(2):
        m = json.load(open(f"{mem}.rank{rank}.json"))
        measured[m["stage"]] = m
    results[schedule] = (planned, measured)

print(f"\n{'schedule':<12}{'stage':>6}{'planned MiB':>13}{'analysed MiB':>14}{'measured MiB':>14}"
      f"{'stash planned':>15}{'stash meas.':>13}{'stashed':>9}{'temps planned':>15}{'temps meas.':>13}")
for schedule, (planned, measured) in results.items():
    for s in sorted(planned):
        p, m = planned[s], measured[s]
        meas = m["state_bytes"] + m["stash_bytes"] + m["temporaries_bytes"]
        print(f"{schedule:<12}{s:>6}{p['peak_bytes'] / MiB:>13.3f}{p['analysed_peak_bytes'] / MiB:>14.3f}"
              f"{meas / MiB:>14.3f}{p['stash_bytes']:>15}{m['stash_bytes']:>13}{p['max_stashed']:>9}"
              f"{p['temporaries_bytes']:>15}{m['temporaries_bytes']:>13}")
print()

for schedule, (planned, measured) in results.items():
    for s in sorted(planned):
        p, m = planned[s], measured[s]
        tag = f"{schedule} stage {s}"
        check(m["static"]["state_bytes"] == p["state_bytes"],
              f"{tag}: allocated states {m['static']['state_bytes']} = planned {p['state_bytes']} (exactly)")
        listed = sum(m["static"].values())
        check(m["allocated_bytes"] == listed,
              f"{tag}: the runtime's allocation counter {m['allocated_bytes']} = the step's listed blocks {listed}")
        check(m["allocated_bytes"] == p["allocated_bytes"],
              f"{tag}: the runtime's allocation counter {m['allocated_bytes']} = the plan's allocated bytes "
              f"{p['allocated_bytes']} (exactly: one storage analysis, lib/Analysis/BufferLiveness.cpp)")
        check(m["static"]["temporaries_bytes"] == p["temporaries_bytes"],
              f"{tag}: emitted shared arena {m['static']['temporaries_bytes']} = planned temporaries "
              f"{p['temporaries_bytes']} (kernel scratch included)")
        check(abs(m["state_bytes"] - p["state_bytes"]) <= 8 * PAGE,
              f"{tag}: resident states {m['state_bytes']} = planned {p['state_bytes']} (+- 8 pages)")
        check(m["static"]["stash_bytes"] == max(p["stash_bytes"], 64),
              f"{tag}: emitted train-step arena {m['static']['stash_bytes']} = planned stash {p['stash_bytes']}")
        check(abs(m["stash_bytes"] - p["stash_bytes"]) <= PAGE,
              f"{tag}: resident stash {m['stash_bytes']} = planned {p['stash_bytes']} (+- 1 page)")
        t, tp = m["temporaries_bytes"], p["temporaries_bytes"]
        check(abs(t - tp) <= 0.01 * tp and t <= m["static"]["temporaries_bytes"],
              f"{tag}: resident temporaries {t} within 1% of planned {tp} (static {m['static']['temporaries_bytes']})")
        a = p["analysed_peak_bytes"]
        check(abs(a - p["peak_bytes"]) <= 0.10 * p["peak_bytes"],
              f"{tag}: the critical-path model's peak {a:.0f} within 10% of the planned {p['peak_bytes']}")

g, f = results["gpipe"][0], results["1f1b"][0]
check(g[0]["max_stashed"] == 4 and f[0]["max_stashed"] == 2 and g[1]["max_stashed"] == 1 and
      f[1]["max_stashed"] == 1,
      f"max_stashed: GPipe {g[0]['max_stashed']}/{g[1]['max_stashed']}, 1F1B {f[0]['max_stashed']}/"
      f"{f[1]['max_stashed']} (M = 4 and P - s)")
planned_diff = g[0]["stash_bytes"] - f[0]["stash_bytes"]
gm, fm = results["gpipe"][1], results["1f1b"][1]
measured_diff = gm[0]["stash_bytes"] - fm[0]["stash_bytes"]
check(planned_diff > 0 and abs(measured_diff - planned_diff) <= PAGE,
      f"stage 0 stash GPipe - 1F1B: measured {measured_diff} B = planned {planned_diff} B (+- 1 page)")
if failures:
    sys.exit(f"{len(failures)} check(s) failed")
print("all checks passed")
