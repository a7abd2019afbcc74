#!/usr/bin/env python3
"""CTest codegen-cpu-stall: a real stalled rank ends the job with an error naming the operation, within the deadline.

    stall_e2e.py BUILD_DIR SOURCE_DIR WORK_DIR

ptrain-compile the bundled GPT at pp=2 (1F1B, 2 micro-batches), then ptrain-run it under mpirun with a
3 s communication deadline and PTRAIN_RUN_STALL=1:2: rank 1 (stage 1) trains step 1, then sleeps before step 2
instead of posting its operations (a hung rank, not a crashed one). Rank 0 must report a deadline error that
names the point-to-point operation, the peer, the size and the training step, end the job with MPI_Abort
(ptrain_step_abort), and ptrain-run must exit nonzero, within the deadline plus slack of the moment rank 1
stalled (the time it prints). Without the deadline the job would wait forever.
"""

import os
import re
import sys
import time

from e2e import check, corpus, failures, finish, run, setup

DEADLINE_S = 3
SLACK_S = 30  # mpirun's teardown and a loaded 2-core machine

build, source, work, BIN, MODEL = setup(sys.argv)
data = corpus(source, work, max_bytes=100000)
out_dir = os.path.join(work, "pp2")
rc, out = run([os.path.join(BIN, "ptrain-compile"), MODEL, "--pp", "2", "--micro-batches", "2", "--target", "cpu",
               "-o", out_dir])
check(rc == 0, "ptrain-compile --pp 2" + ("" if rc == 0 else ":\n" + out))
if failures:
    finish()

os.environ["PTRAIN_RUN_STALL"] = "1:2"
start = time.time()
rc, out = run([os.path.join(BIN, "ptrain-run"), out_dir, "--data", data, "--steps", "3", "--val-batches", "1",
               "--timeout", str(DEADLINE_S), "--no-plots"], timeout=300)
end = time.time()
print(out)
check(rc != 0, f"ptrain-run exits nonzero (rc {rc})")
stalled = re.search(r"rank 1 stalls before step 2 at t=([0-9.]+)", out)
check(stalled is not None, "rank 1 stalled (PTRAIN_RUN_STALL)")
error = re.search(r"ptrain-run: error: ptrain_step_train failed \(status \d+\): .*", out)
check(error is not None, "rank 0 reports ptrain_step_train's error")
if error:
    msg = error.group(0)
    check(re.search(r"(recv from|send to) peer 1 of comm size 2 \(tag \d+, \d+ bytes\) at step 2 did not complete "
                    rf"within {DEADLINE_S} s", msg) is not None,
          "the error names the operation, the peer, the byte count, the step and the deadline")
if stalled:
    after = end - float(stalled.group(1))
    print(f"job ended {after:.1f} s after rank 1 stalled (deadline {DEADLINE_S} s; total {end - start:.1f} s)")
    check(DEADLINE_S - 1 <= after <= DEADLINE_S + SLACK_S, f"the job ends within the deadline + {SLACK_S} s")
check(re.search(r"ptrain-run: rank 0 ends the job with MPI_Abort \(error code 1\)", out) is not None,
      "rank 0 ends the job with MPI_Abort")
finish()
