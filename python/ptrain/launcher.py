"""ptrain-run's own torchrun-style launcher (`--launcher env`): one process per rank on this machine, no mpirun.

    status = run_ranks(cmd, world, env)

Every rank is `cmd` with torchrun's environment (the variables the generated step's ptrain_step_init and the
runtime's rendezvous read, docs/Runtime.md "Rendezvous"): RANK = LOCAL_RANK = r, WORLD_SIZE = LOCAL_WORLD_SIZE =
world, MASTER_ADDR = 127.0.0.1, MASTER_PORT = a free port of this machine; Open MPI's variables (OMPI_*, PMIX_*)
are removed, so a launcher started under mpirun does not make its ranks believe they are MPI processes. Each
rank is its own process group (so one signal reaches a rank and whatever it started) and is killed by the
kernel if the launcher dies (PR_SET_PDEATHSIG), so no rank outlives it.

The ranks' output is streamed line by line, every line (and every \\r redraw of a progress bar) prefixed with
"[rank r] ", stdout to stdout and stderr to stderr. A line is written once it is complete, in one write, so lines
of different ranks never mix, however a rank's writes are cut (an unbuffered rank, PYTHONUNBUFFERED=1, writes
print's text and its newline apart); a rank's last line without its newline is written, with one, when that
stream ends, and a line longer than MAX_LINE characters in parts of that size.

When a rank exits with a nonzero status or a signal, the others get FAIL_GRACE_S seconds to report their own
errors (peers of a failed rank usually fail at once, e.g. all ranks at a missing GPU), then SIGTERM, then SIGKILL
after KILL_AFTER_S more: no rank keeps the job alive.
Ctrl-C (SIGINT) or SIGTERM to the launcher is forwarded to every rank as SIGINT; ranks still running
KILL_AFTER_S later are killed. At the end the launcher prints one line per failed rank: the rank, its exit
status or signal, and its error (its last "ptrain-run: error:" line, else its last line of output), and one
line per rank it ended. The result is 0 when every rank exited 0, 130 after an interrupt, else 1.
"""

import codecs
import ctypes
import os
import re
import selectors
import signal
import socket
import subprocess
import sys
import time

FAIL_GRACE_S = 2.0  # after a rank fails: time for the other ranks' own errors before SIGTERM
KILL_AFTER_S = 5.0  # after SIGTERM (or a forwarded SIGINT): time before SIGKILL
PR_SET_PDEATHSIG = 1
MAX_LINE = 1 << 16  # characters of an unfinished line kept before they are written as a part of it
LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)")  # a line with its end (a redraw's \r ends one too)


def free_port(host="127.0.0.1"):
    """A TCP port nobody listens on now (the kernel's choice of an ephemeral port), for MASTER_PORT."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def rank_env(base, rank, world, port, addr="127.0.0.1"):
    """torchrun's variables for rank `rank` of `world` on one machine, over `base` without Open MPI's."""
    env = {k: v for k, v in base.items() if not k.startswith(("OMPI_", "PMIX_"))}
    env.update({"RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": str(world),
                "LOCAL_WORLD_SIZE": str(world), "GROUP_RANK": "0", "MASTER_ADDR": addr, "MASTER_PORT": str(port)})
    return env


def describe_status(status):
    if status < 0:
        try:
            name = signal.Signals(-status).name
        except ValueError:
            name = f"signal {-status}"
        return f"killed by {name}"
    return f"exit status {status}"


class Rank:
    """One rank's process and the tail of its output."""

    def __init__(self, rank, proc):
        self.rank, self.proc = rank, proc
        self.status = None  # the exit status (negative: the signal), once it has exited
        self.ended = None  # the signal the launcher sent it, if any
        self.decoder = {}  # per stream: UTF-8 decoding across reads (a character may span two)
        self.last_line = ""  # the last nonempty line of its output
        self.last_error = ""  # its last "ptrain-run: error:" line
        self.pending = {}  # per stream: the text of the current, unfinished line

    def signal(self, sig):
        if self.status is None:
            try:
                os.killpg(self.proc.pid, sig)
            except (ProcessLookupError, PermissionError):
                pass

    def error(self):
        return self.last_error or self.last_line or "(no output)"


def _forward(rank, name, chunk, stream):
    """Writes the lines of rank's stream `name` that chunk completes (a line ends at \\n or \\r), each with
    "[rank r] " in front, in one write, and keeps the unfinished rest; chunk b"" is the stream's end: the rest is
    written with a newline. Remembers the rank's last line and its last "ptrain-run: error:" line."""
    decoder = rank.decoder.setdefault(name, codecs.getincrementaldecoder("utf-8")(errors="replace"))
    text = rank.pending.get(name, "") + decoder.decode(chunk, final=not chunk)
    lines, done = [], 0
    for match in LINE.finditer(text):
        lines.append(match.group())
        done = match.end()
    rest = text[done:]
    if rest and (not chunk or len(rest) >= MAX_LINE):
        lines.append(rest if chunk else rest + "\n")
        rest = ""
    rank.pending[name] = rest
    prefix = f"[rank {rank.rank}] "
    for line in lines:
        line = line.strip()
        if line:
            rank.last_line = line
            if "ptrain-run: error:" in line:
                rank.last_error = line[line.index("ptrain-run: error:"):]
    if lines:
        stream.write("".join(prefix + line for line in lines))
        stream.flush()


def _set_death_signal():
    """In the child before exec: killed with SIGKILL when the launcher dies (no orphan rank)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def run_ranks(cmd, world, env, out=None, err=None, fail_grace_s=FAIL_GRACE_S, kill_after_s=KILL_AFTER_S):
    """Runs `world` ranks of cmd (a list, or a function of the rank returning one) with rank_env over env and
    supervises them (module docstring); returns 0, 1 or 130."""
    out, err = out or sys.stdout, err or sys.stderr
    port = free_port()
    interrupted = []

    def on_signal(signum, frame):
        interrupted.append(signum)

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    ranks, selector = [], selectors.DefaultSelector()
    try:
        for r in range(world):
            argv = cmd(r) if callable(cmd) else cmd
            proc = subprocess.Popen(argv, env=rank_env(env, r, world, port), stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                                    preexec_fn=_set_death_signal)
            rank = Rank(r, proc)
            ranks.append(rank)
            selector.register(proc.stdout, selectors.EVENT_READ, (rank, "stdout", out))
            selector.register(proc.stderr, selectors.EVENT_READ, (rank, "stderr", err))
        first_failure, failed_at, term_at, forwarded = None, None, None, False
        open_pipes = 2 * world
        while open_pipes or any(r.status is None for r in ranks):
            for key, _ in selector.select(timeout=0.05):
                rank, name, stream = key.data
                chunk = os.read(key.fileobj.fileno(), 65536)
                _forward(rank, name, chunk, stream)
                if not chunk:
                    selector.unregister(key.fileobj)
                    key.fileobj.close()
                    open_pipes -= 1
            now = time.monotonic()
            for rank in ranks:
                if rank.status is None and rank.proc.poll() is not None:
                    rank.status = rank.proc.returncode
                    if rank.status != 0 and first_failure is None and not interrupted:
                        first_failure, failed_at = rank, now
            if interrupted and not forwarded:
                forwarded, term_at = True, now
                for rank in ranks:
                    if rank.status is None:
                        rank.ended = signal.SIGINT
                        rank.signal(signal.SIGINT)
            elif first_failure is not None and term_at is None and now - failed_at >= fail_grace_s:
                term_at = now
                for rank in ranks:
                    if rank.status is None:
                        rank.ended = signal.SIGTERM
                        rank.signal(signal.SIGTERM)
            if term_at is not None and now - term_at >= kill_after_s:
                for rank in ranks:
                    if rank.status is None:
                        rank.ended = signal.SIGKILL
                        rank.signal(signal.SIGKILL)
    finally:
        for rank in ranks:  # Whatever happened in this loop (a write error, ...): no rank survives it.
            if rank.proc.poll() is None:
                rank.signal(signal.SIGKILL)
                rank.proc.wait()
        selector.close()
        for s, handler in old.items():
            signal.signal(s, handler)
    if interrupted:
        print(f"ptrain-run: interrupted ({signal.Signals(interrupted[0]).name}); forwarded SIGINT to every rank",
              file=err, flush=True)
    for rank in ranks:
        if rank.status == 0:
            continue
        if rank.ended is not None:
            print(f"ptrain-run: rank {rank.rank}: ended by the launcher ({rank.ended.name}"
                  + (f" after rank {first_failure.rank} failed" if first_failure and not interrupted else "")
                  + f"): {describe_status(rank.status)}", file=err, flush=True)
        else:
            print(f"ptrain-run: rank {rank.rank} failed ({describe_status(rank.status)}): {rank.error()}",
                  file=err, flush=True)
    if interrupted:
        return 130
    return 0 if all(r.status == 0 for r in ranks) else 1
