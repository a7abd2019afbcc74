"""ptrain-run's torchrun-style launcher (python/ptrain/launcher.py) with fake ranks, real processes: the
environment each rank sees, the rank-prefixed output (whole lines, however the ranks' writes are cut), a failed
rank ending the others (SIGTERM, then SIGKILL for one that ignores it) with every rank's error reported, Ctrl-C
forwarded, and no rank outliving a killed launcher. (The real step under it: test/Target/Cuda/compile_e2e.py,
the pp2 CUDA plan's ranks at the device error.)"""

import os
import signal
import subprocess
import sys
import textwrap
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
from ptrain import launcher


def rank_cmd(body):
    """A fake rank: python -c with `body`; `rank` is its RANK."""
    return [sys.executable, "-c", "import os, signal, sys, time\nrank = int(os.environ['RANK'])\n" +
            textwrap.dedent(body)]


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped by its parent) is not running.
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split(")")[-1].split()[0] != "Z"


def test_environment_and_prefixed_output(capfd):
    body = """
        keys = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
        print("env " + " ".join(f"{k}={os.environ.get(k)}" for k in keys), flush=True)
        print("ompi", [k for k in os.environ if k.startswith(("OMPI_", "PMIX_"))], flush=True)
        sys.stderr.write("bar 1/2\\rbar 2/2\\n")
    """
    env = dict(os.environ, OMPI_COMM_WORLD_SIZE="3", PMIX_RANK="0")  # As if the launcher ran under mpirun.
    assert launcher.run_ranks(rank_cmd(body), 3, env) == 0
    out, err = capfd.readouterr()
    lines = out.splitlines()
    ports = set()
    for r in range(3):
        line = next(x for x in lines if x.startswith(f"[rank {r}] env "))
        fields = dict(kv.split("=") for kv in line.split()[3:])
        assert fields["RANK"] == fields["LOCAL_RANK"] == str(r), line
        assert fields["WORLD_SIZE"] == fields["LOCAL_WORLD_SIZE"] == "3", line
        assert fields["MASTER_ADDR"] == "127.0.0.1", line
        ports.add(fields["MASTER_PORT"])
        assert f"[rank {r}] ompi []" in lines  # Open MPI's variables are not passed on.
        assert f"[rank {r}] bar 1/2\r[rank {r}] bar 2/2\n" in err  # A progress bar's redraw keeps its prefix.
    assert len(ports) == 1 and 1 <= int(ports.pop()) <= 65535
    assert "failed" not in err


def test_lines_of_ranks_do_not_mix(capfd):
    # Unbuffered ranks (PYTHONUNBUFFERED=1: print writes its text and its newline apart), here cut further, a few
    # bytes a write, all at once: every output line is one whole line of one rank. The launcher wrote each piece
    # as it came, and "[rank 1] pid 22285[rank 0] pid 22284" made test_ctrl_c_is_forwarded wait for ever.
    # A UTF-8 character cut between two writes stays one character; a last line without a newline gets one.
    body = """
        text = "".join(f"rank {rank} line {i} \u00e9t\u00e9 " + "x" * (i % 7) + "\\n" for i in range(40)) + "end"
        data = text.encode()
        for i in range(0, len(data), 3):
            os.write(1, data[i:i + 3])
            time.sleep(0.0005)
    """
    assert launcher.run_ranks(rank_cmd(body), 3, dict(os.environ)) == 0
    lines = capfd.readouterr().out.split("\n")
    assert lines.pop() == ""  # the output ends with a newline
    for r in range(3):
        want = [f"[rank {r}] rank {r} line {i} \u00e9t\u00e9 " + "x" * (i % 7) for i in range(40)] + [f"[rank {r}] end"]
        assert [line for line in lines if line.startswith(f"[rank {r}] ")] == want
    assert all(line.startswith(tuple(f"[rank {r}] " for r in range(3))) for line in lines), lines


def test_a_failed_rank_ends_the_others(capfd):
    # Rank 1 fails; ranks 0 and 2 would run for 10 minutes: both are ended within the grace period.
    body = """
        print(f"pid {os.getpid()}", flush=True)
        if rank == 1:
            time.sleep(0.3)
            print("ptrain-run: error: step 3: the loss is nan", file=sys.stderr, flush=True)
            sys.exit(3)
        time.sleep(600)
    """
    start = time.monotonic()
    status = launcher.run_ranks(rank_cmd(body), 3, dict(os.environ), fail_grace_s=0.5, kill_after_s=2)
    took = time.monotonic() - start
    out, err = capfd.readouterr()
    assert status == 1
    assert took < 5, f"the job took {took:.1f} s after rank 1 failed"
    assert "[rank 1] ptrain-run: error: step 3: the loss is nan" in err
    assert "ptrain-run: rank 1 failed (exit status 3): ptrain-run: error: step 3: the loss is nan" in err
    for r in (0, 2):
        assert (f"ptrain-run: rank {r}: ended by the launcher (SIGTERM after rank 1 failed): killed by SIGTERM"
                in err), err
    pids = [int(line.split()[-1]) for line in out.splitlines() if " pid " in line]
    assert len(pids) == 3 and not any(alive(p) for p in pids)


def test_every_rank_error_and_sigkill(capfd):
    # Ranks 0 and 1 fail at once (as every rank at a missing GPU): both errors are reported. Rank 2 ignores
    # SIGTERM: it is killed after kill_after_s.
    body = """
        if rank < 2:
            time.sleep(0.2)
            print(f"ptrain-run: error: ptrain_step_init failed (status 7): rank {rank}: no device", file=sys.stderr)
            sys.exit(1)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(600)
    """
    start = time.monotonic()
    assert launcher.run_ranks(rank_cmd(body), 3, dict(os.environ), fail_grace_s=1, kill_after_s=1) == 1
    assert time.monotonic() - start < 6
    err = capfd.readouterr().err
    for r in (0, 1):
        assert (f"ptrain-run: rank {r} failed (exit status 1): ptrain-run: error: ptrain_step_init failed (status 7): "
                f"rank {r}: no device") in err, err
    assert "ptrain-run: rank 2: ended by the launcher (SIGKILL after rank 0 failed): killed by SIGKILL" in err or \
        "ptrain-run: rank 2: ended by the launcher (SIGKILL after rank 1 failed): killed by SIGKILL" in err, err


def test_a_rank_killed_by_a_signal(capfd):
    # The default action first: under the sanitized build's LD_PRELOAD (docs/Sanitizers.md) AddressSanitizer's
    # SIGSEGV handler would turn the signal into a report and exit status 1, and the test is about a rank that a
    # signal ends.
    body = """
        if rank == 0:
            signal.signal(signal.SIGSEGV, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGSEGV)
    """
    assert launcher.run_ranks(rank_cmd(body), 2, dict(os.environ), fail_grace_s=0.2) == 1
    assert "ptrain-run: rank 0 failed (killed by SIGSEGV): (no output)" in capfd.readouterr().err


# A launcher in its own process, for the signals sent to it: prints its ranks' output, exits with run_ranks'.
# kill_after_s leaves a rank slow to be scheduled (a loaded CI machine runs the MPI tests beside this one) time
# to handle the forwarded SIGINT before it would be killed; a rank that handles it ends at once.
LAUNCHER = """
import os, sys
from ptrain import launcher
sys.exit(launcher.run_ranks({cmd!r}, 2, dict(os.environ), kill_after_s=30))
"""


def start_launcher(body):
    code = LAUNCHER.format(cmd=rank_cmd(body))
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")))


def wait_for_pids(proc, n, timeout_s=60):
    """The pids that the launcher's n ranks print first; a launcher that has not printed them all within timeout_s
    is killed (its ranks die with it), so a failure is this assertion, not a test waiting for ever."""
    import threading
    watchdog = threading.Timer(timeout_s, proc.kill)
    watchdog.start()
    pids, seen = [], []
    try:
        while len(pids) < n:
            line = proc.stdout.readline()
            assert line, f"the launcher ended (or printed no {n} pids in {timeout_s} s); its output: {seen}"
            seen.append(line)
            if line.startswith("[rank ") and " pid " in line:
                pids.append(int(line.split()[-1]))
    finally:
        watchdog.cancel()
    return pids


def test_ctrl_c_is_forwarded():
    body = """
        def on_int(signum, frame):
            # os.write, not print: the SIGINT may land while the pid line's print still holds stdout's buffer
            # (it has written the line, so the test has sent the signal), and print inside that print raises
            # "reentrant call" (seen once on a loaded machine: rank 1 ended with status 1 and a traceback).
            os.write(1, b"got SIGINT\\n")
            sys.exit(130)
        signal.signal(signal.SIGINT, on_int)
        print(f"pid {os.getpid()}", flush=True)
        time.sleep(600)
    """
    proc = start_launcher(body)
    pids = wait_for_pids(proc, 2)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "[rank 0] got SIGINT" in out and "[rank 1] got SIGINT" in out, (out, err)
    assert "ptrain-run: interrupted (SIGINT); forwarded SIGINT to every rank" in err
    assert "ptrain-run: rank 0: ended by the launcher (SIGINT): exit status 130" in err, err
    assert not any(alive(p) for p in pids)


def test_no_orphan_when_the_launcher_is_killed():
    body = """
        print(f"pid {os.getpid()}", flush=True)
        time.sleep(600)
    """
    proc = start_launcher(body)
    pids = wait_for_pids(proc, 2)
    proc.kill()  # SIGKILL: the launcher cannot end its ranks itself; the kernel does (PR_SET_PDEATHSIG).
    proc.communicate(timeout=10)
    deadline = time.monotonic() + 10
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(p) for p in pids), "a rank outlived its killed launcher"


def test_free_port_is_free():
    import socket
    port = launcher.free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))  # Nobody holds it.
