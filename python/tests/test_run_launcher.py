"""ptrain-run's launcher rejects bad input before mpirun starts (python/ptrain/run.py, run_launch.py): a libstep.so that is
not a whole ELF library (a truncated one made every rank die of SIGBUS in dlopen), data shorter than one
window (every rank reported it after mpirun started), and a --checkpoint folder that does not exist (found
out by ptrain_step_save after the last training step), and a plan.json that is not the plan embedded in
libstep.so (a hand-edited seq made every rank read past its token buffer), data bytes outside the vocabulary,
--val-batches 0, a --timeout that is not positive, --log/--memory-log folders that do not exist, --mpirun-args
that do not split into words; a failed or interrupted run's log is renamed RUN.jsonl.failed, and Ctrl-C is a line
and exit status 130, not a traceback; outputs (--log, the run log, the checkpoint) that would overwrite the plan,
the data or the model are refused. The launchers: --launcher env refuses a multi-rank CPU plan and runs a
one-rank one; started with torchrun's RANK/WORLD_SIZE, ptrain-run is that rank (a WORLD_SIZE other than the
plan's, a bad RANK and a multi-rank CPU plan are refused)."""

import json
import os
import shutil
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
from ptrain import plan_abi, run, run_launch, run_loop, run_plan

# Any whole ELF shared library stands in for libstep.so: the launcher reads headers, it does not load it.
ELF = next((p for p in ("/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6")
            if os.path.isfile(p)), None)


@pytest.fixture
def plan_dir(tmp_path):
    if ELF is None:
        pytest.skip("no libm.so.6 to stand in for libstep.so")
    out = tmp_path / "out"
    out.mkdir()
    shutil.copy(ELF, out / "libstep.so")
    plan = {"pp": 2, "micro_batches": 4, "batch": 4, "seq": 64, "vocab": 256, "library": "libstep.so",
            "model": os.path.join(ROOT, "models", "gpt", "gpt.onnx")}
    (out / "plan.json").write_text(json.dumps(plan))
    plan_abi.embed(str(out / "libstep.so"), plan)  # What ptrain-compile does (plan_abi.py).
    data = tmp_path / "data"
    data.mkdir()
    (data / "train.bin").write_bytes(bytes(range(256)) * 4)
    (data / "val.bin").write_bytes(bytes(range(256)))
    (data / "data.json").write_text('{"format": "bytes"}')  # The declaration (DESIGN.md decision 13).
    return out, data


def launch(*argv):
    args = run.parser().parse_args([str(a) for a in argv])
    args.argv = list(argv)
    return run_launch.launch(args)


def test_whole_library_passes(plan_dir):
    out, _ = plan_dir
    assert run_plan.load_plan(str(out))["pp"] == 2


@pytest.mark.parametrize("keep", [0, 10, 100, 5000, -100])
def test_truncated_library(plan_dir, keep):
    out, data = plan_dir
    lib = out / "libstep.so"
    whole = lib.read_bytes()
    lib.write_bytes(whole[:keep] if keep >= 0 else whole[:len(whole) + keep])
    with pytest.raises(run_plan.RunError, match=r"libstep.so: (truncated|not a 64-bit little-endian ELF)"):
        launch(out, "--data", data, "--steps", "1")


def test_garbage_library(plan_dir):
    out, data = plan_dir
    (out / "libstep.so").write_text("garbage\n" * 100)
    with pytest.raises(run_plan.RunError, match="libstep.so: not a 64-bit little-endian ELF shared library"):
        launch(out, "--data", data, "--steps", "1")


def test_data_shorter_than_a_window(plan_dir):
    out, data = plan_dir
    (data / "val.bin").write_bytes(b"x" * 64)
    with pytest.raises(run_plan.RunError, match=r"the validation data \(.*val.bin\) has 64 tokens, fewer than one window of 65"):
        launch(out, "--data", data, "--steps", "1")


def test_checkpoint_folder_missing(plan_dir, tmp_path):
    out, data = plan_dir
    with pytest.raises(run_plan.RunError, match=r"--checkpoint .*/nope/ck: the folder .*/nope does not exist"):
        launch(out, "--data", data, "--steps", "1", "--checkpoint", tmp_path / "nope" / "ck")


def test_plan_edited_after_compiling(plan_dir):
    out, data = plan_dir
    plan = json.loads((out / "plan.json").read_text())
    plan["seq"] = 32
    (out / "plan.json").write_text(json.dumps(plan))
    with pytest.raises(run_plan.RunError, match=r"plan.json: 'seq' is 32 but .*libstep.so was compiled for 64"):
        launch(out, "--data", data, "--steps", "1")


def test_library_without_embedded_plan(plan_dir):
    out, data = plan_dir
    shutil.copy(ELF, out / "libstep.so")
    with pytest.raises(run_plan.RunError, match=r"libstep.so: no embedded plan \(section .ptrain_plan\)"):
        launch(out, "--data", data, "--steps", "1")


def test_data_outside_the_vocabulary(plan_dir, monkeypatch):
    # Bytes are the token ids: a model with a vocabulary under 256 (gpt2_megatron's 10) failed in every rank's
    # embedding after mpirun started; the launcher names the byte and the vocabulary.
    out, data = plan_dir
    plan = json.loads((out / "plan.json").read_text())
    plan["vocab"] = 10
    (out / "plan.json").write_text(json.dumps(plan))
    shutil.copy(ELF, out / "libstep.so")
    plan_abi.embed(str(out / "libstep.so"), plan)
    with pytest.raises(run_plan.RunError, match=r"--data .*train.bin: holds the byte 10, outside the model's vocabulary of "
                                           r"10 tokens \(first at byte 10; format bytes"):
        launch(out, "--data", data, "--steps", "1")
    (data / "train.bin").write_bytes(bytes(range(10)) * 100)
    (data / "val.bin").write_bytes(bytes(range(10)) * 10)
    monkeypatch.setattr(run_launch.shutil, "which", lambda name: "/usr/bin/mpirun")
    monkeypatch.setattr(run_launch, "call_mpirun", lambda cmd, env: 0)
    assert launch(out, "--data", data, "--steps", "1") == 0  # bytes below 10: the launcher starts mpirun


def test_val_batches_zero(plan_dir):
    # The validation loss is the mean over --val-batches: 0 was a ZeroDivisionError traceback in every rank.
    out, data = plan_dir
    with pytest.raises(run_plan.RunError, match=r"--val-batches 0: must be >= 1"):
        launch(out, "--data", data, "--steps", "1", "--val-batches", "0")


@pytest.mark.parametrize("timeout", ["0", "-5", "nan", "inf"])
def test_timeout_not_positive(plan_dir, timeout):
    out, data = plan_dir
    with pytest.raises(run_plan.RunError, match=r"--timeout .*: must be a positive number of seconds"):
        launch(out, "--data", data, "--steps", "1", "--timeout", timeout)


@pytest.mark.parametrize("flag", ["--log", "--memory-log"])
def test_log_folder_missing(plan_dir, tmp_path, flag):
    # Written after the last step: a missing folder was a FileNotFoundError traceback after training.
    out, data = plan_dir
    with pytest.raises(run_plan.RunError, match=flag + r" .*/nope/x: the folder .*/nope does not exist"):
        launch(out, "--data", data, "--steps", "1", flag, tmp_path / "nope" / "x")


def test_mpirun_args_unbalanced_quote(plan_dir):
    # --mpirun-args is split like a shell line: an unbalanced quote was shlex's ValueError traceback.
    out, data = plan_dir
    with pytest.raises(run_plan.RunError, match=r"--mpirun-args '--host \"a': No closing quotation"):
        launch(out, "--data", data, "--steps", "1", "--mpirun-args", '--host "a')


def test_failed_run_renames_its_run_log(plan_dir, monkeypatch, capsys):
    # mpirun stands in for a run that wrote its log and failed: no run.jsonl that reads like a finished run's.
    out, data = plan_dir

    def failing_run(cmd, env):
        (out / "run.jsonl").write_text('{"record": "run"}\n')
        return 1

    monkeypatch.setattr(run_launch.shutil, "which", lambda name: "/usr/bin/mpirun")
    monkeypatch.setattr(run_launch, "call_mpirun", failing_run)
    assert launch(out, "--data", data, "--steps", "1") == 1
    assert not (out / "run.jsonl").exists()
    assert (out / "run.jsonl.failed").read_text() == '{"record": "run"}\n'
    assert "its run log up to the failure is" in capsys.readouterr().err

    def good_run(cmd, env):
        (out / "run.jsonl").write_text('{"record": "end"}\n')
        return 0

    monkeypatch.setattr(run_launch, "call_mpirun", good_run)
    assert launch(out, "--data", data, "--steps", "1") == 0
    assert (out / "run.jsonl").exists()


def test_interrupted_run(plan_dir, monkeypatch, capsys):
    # Ctrl-C while mpirun runs was a KeyboardInterrupt traceback of the launcher, and the interrupted steps' log
    # stayed run.jsonl (read like a finished run's). Now: one line, the shell's status 130, run.jsonl.failed.
    out, data = plan_dir

    def interrupted_run(cmd, env):
        (out / "run.jsonl").write_text('{"record": "run"}\n')
        raise KeyboardInterrupt

    monkeypatch.setattr(run_launch.shutil, "which", lambda name: "/usr/bin/mpirun")
    monkeypatch.setattr(run_launch, "call_mpirun", interrupted_run)
    assert launch(out, "--data", data, "--steps", "1") == 130
    assert (out / "run.jsonl.failed").exists() and not (out / "run.jsonl").exists()
    err = capsys.readouterr().err
    assert "ptrain-run: interrupted (SIGINT): mpirun and its ranks are stopped" in err
    assert "Traceback" not in err


# The launcher in its own process, for a real SIGINT. DELAY_START: seconds it sleeps right after mpirun's exec,
# inside Popen() (as a loaded machine may deschedule it there).
LAUNCHER = """
import subprocess, sys, time
if {delay_start}:
    execute_child = subprocess.Popen._execute_child
    def delayed(self, *args, **kwargs):
        execute_child(self, *args, **kwargs)
        time.sleep({delay_start})
    subprocess.Popen._execute_child = delayed
from ptrain import run
sys.exit(run.main({argv!r}))
"""


def interrupt_launcher(plan_dir, tmp_path, fake_mpirun="", delay_start=0):
    """Starts the launcher with a stand-in mpirun (a shell script: `fake_mpirun`, then it writes its pid and
    sleeps 60 s), sends the launcher alone SIGINT once mpirun runs; returns (the launcher's exit status, its
    stderr, the seconds from the SIGINT to its end, mpirun's state: "gone" or a /proc state letter)."""
    import signal
    import subprocess
    import time
    out, data = plan_dir
    bindir = tmp_path / "bin"
    bindir.mkdir()
    pidfile = tmp_path / "mpirun.pid"
    fake = bindir / "mpirun"
    fake.write_text(f"#!/bin/sh\n{fake_mpirun}\necho $$ > {pidfile}\nexec sleep 60\n")
    fake.chmod(0o755)
    env = dict(os.environ, PATH=f"{bindir}:{os.environ.get('PATH', '')}", PYTHONPATH=os.path.join(ROOT, "python"))
    code = LAUNCHER.format(delay_start=delay_start,
                           argv=[str(out), "--data", str(data), "--steps", "1", "--no-plots"])
    # SIGINT's default action in the launcher whatever this test inherited (a background job's is SIG_IGN).
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 60
    while not (pidfile.exists() and pidfile.read_text().strip()) and time.time() < deadline:
        time.sleep(0.05)
    assert pidfile.exists(), "the launcher did not start mpirun"
    mpirun_pid = int(pidfile.read_text())
    proc.send_signal(signal.SIGINT)
    sent = time.monotonic()
    try:
        # The stderr pipe reaches its end when the launcher and mpirun (which inherited it) have both ended.
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        try:
            os.kill(mpirun_pid, signal.SIGKILL)  # Left running (the failure under test): do not keep it.
        except ProcessLookupError:
            pass
    took = time.monotonic() - sent
    try:
        with open(f"/proc/{mpirun_pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        state = "gone"
    return proc.returncode, err, took, state


def test_sigint_stops_mpirun(plan_dir, tmp_path):
    # A real SIGINT to the launcher process alone (kill -INT, or Ctrl-C): mpirun (here a stand-in that writes its
    # pid and sleeps) is stopped (SIGTERM) and reaped, and the launcher exits 130 without a traceback.
    status, err, took, state = interrupt_launcher(plan_dir, tmp_path)
    assert status == 130, err
    assert "Traceback" not in err and "interrupted (SIGINT): mpirun and its ranks are stopped" in err
    assert state == "gone", f"mpirun still there (state {state})"
    assert took < run_launch.MPIRUN_OWN_EXIT_S + run_launch.MPIRUN_TERM_S, took


def test_sigint_while_mpirun_starts(plan_dir, tmp_path):
    # The SIGINT comes while the launcher is still inside Popen(), after mpirun's exec. subprocess.call had no
    # hold on mpirun there: the launcher said "mpirun and its ranks are stopped" and exited 130, mpirun slept on
    # with the launcher's stderr (seen in the fresh-machine rehearsal, test_sigint_stops_mpirun timing out).
    status, err, took, state = interrupt_launcher(plan_dir, tmp_path, delay_start=2)
    assert status == 130, err
    assert "interrupted (SIGINT): mpirun and its ranks are stopped" in err
    assert state == "gone", f"mpirun still there (state {state})"


def test_sigint_kills_an_mpirun_that_ignores_sigterm(plan_dir, tmp_path):
    status, err, took, state = interrupt_launcher(plan_dir, tmp_path, fake_mpirun="trap '' TERM")
    assert status == 130, err
    assert state == "gone", f"mpirun still there (state {state})"
    assert run_launch.MPIRUN_OWN_EXIT_S + run_launch.MPIRUN_TERM_S <= took < 20, took  # SIGKILL, after the SIGTERM's grace


@pytest.mark.parametrize("flag,target", [("--log", "plan.json"), ("--run-log", "train.bin"),
                                         ("--checkpoint", "model")])
def test_outputs_that_are_inputs(plan_dir, tmp_path, flag, target):
    # --log out/plan.json trained, then replaced the plan with the losses (the folder no longer ran); the run log
    # or a checkpoint over the data or the model destroyed them the same way. Refused before mpirun.
    out, data = plan_dir
    path = {"plan.json": out / "plan.json", "train.bin": data / "train.bin"}.get(target)
    if target == "model":  # pp = 1: the checkpoint is PATH itself
        plan = json.loads((out / "plan.json").read_text())
        plan.update({"pp": 1, "model": str(tmp_path / "model.onnx")})
        (tmp_path / "model.onnx").write_bytes(b"weights")
        (out / "plan.json").write_text(json.dumps(plan))
        shutil.copy(ELF, out / "libstep.so")
        plan_abi.embed(str(out / "libstep.so"), plan)
        path = tmp_path / "model.onnx"
    before = path.read_bytes()
    with pytest.raises(run_plan.RunError, match=flag + r" writes .*, which is "):
        launch(out, "--data", data, "--steps", "1", flag, path)
    assert path.read_bytes() == before


def test_env_launcher_refuses_a_multirank_cpu_plan(plan_dir):
    # The CPU step communicates over MPI: without mpirun only a world of 1 can run.
    out, data = plan_dir
    with pytest.raises(run_plan.RunError, match=r"--launcher env: the step in .* is a --target cpu step of 2 ranks, and "
                                           r"the CPU step communicates over MPI: only a world of 1 runs without "
                                           r"mpirun; use --launcher mpirun"):
        launch(out, "--data", data, "--steps", "1", "--launcher", "env")


def test_env_launcher_runs_a_single_rank_cpu_plan(plan_dir, monkeypatch):
    out, data = plan_dir
    plan = json.loads((out / "plan.json").read_text())
    plan["pp"] = 1
    (out / "plan.json").write_text(json.dumps(plan))
    shutil.copy(ELF, out / "libstep.so")
    plan_abi.embed(str(out / "libstep.so"), plan)
    from ptrain import launcher
    calls = []
    monkeypatch.setattr(launcher, "run_ranks", lambda cmd, world, env: calls.append((cmd, world, env)) or 0)
    assert launch(out, "--data", data, "--steps", "1", "--launcher", "env") == 0
    (cmd, world, env), = calls
    assert world == 1 and cmd[1:4] == ["-m", "ptrain.run", "--worker"] and env["PTRAIN_COMM_TIMEOUT_S"] == "120.0"
    # The ranks import this package: its folder first on their PYTHONPATH.
    assert env["PYTHONPATH"].split(os.pathsep)[0] == os.path.join(ROOT, "python")
    with pytest.raises(run_plan.RunError, match=r"--mpirun-args '--host a': only with --launcher mpirun"):
        launch(out, "--data", data, "--steps", "1", "--launcher", "env", "--mpirun-args", "--host a")


def torchrun_main(monkeypatch, out, data, rank, world):
    monkeypatch.setenv("RANK", str(rank))
    monkeypatch.setenv("WORLD_SIZE", str(world))
    monkeypatch.delenv("OMPI_COMM_WORLD_SIZE", raising=False)
    return run.main([str(out), "--data", str(data), "--steps", "1"])


def test_torchrun_world_must_be_the_plans(plan_dir, monkeypatch, capsys):
    # Started by torchrun (RANK, WORLD_SIZE set, no mpirun): ptrain-run is one rank and launches nothing.
    out, data = plan_dir
    monkeypatch.setattr(run_launch, "call_mpirun", lambda *a, **k: pytest.fail("launched mpirun under torchrun"))
    assert torchrun_main(monkeypatch, out, data, 0, 3) == 1
    assert ("WORLD_SIZE=3 (torchrun's environment): the step in " in capsys.readouterr().err)
    assert torchrun_main(monkeypatch, out, data, 2, 2) == 1
    assert "RANK=2, WORLD_SIZE=2: expected 0 <= RANK < WORLD_SIZE" in capsys.readouterr().err
    # The right world, but the pp2 CPU plan communicates over MPI: refused by name.
    assert torchrun_main(monkeypatch, out, data, 0, 2) == 1
    assert "is a --target cpu step of 2 ranks: it communicates over MPI and cannot run under torchrun" in \
        capsys.readouterr().err


def test_torchrun_single_rank_runs_the_worker(plan_dir, monkeypatch):
    out, data = plan_dir
    plan = json.loads((out / "plan.json").read_text())
    plan["pp"] = 1
    (out / "plan.json").write_text(json.dumps(plan))
    shutil.copy(ELF, out / "libstep.so")
    plan_abi.embed(str(out / "libstep.so"), plan)
    ran = []
    monkeypatch.setattr(run_loop, "work", lambda args: ran.append(args.worker))
    for key in run_launch.rank_defaults({}, 1):  # Set by the rank: undone after the test.
        monkeypatch.delenv(key, raising=False)
    assert torchrun_main(monkeypatch, out, data, 0, 1) == 0
    assert ran == [True] and os.environ["PTRAIN_COMM_TIMEOUT_S"] == "120.0"


def test_help_states_the_data_formats(capsys):
    # DESIGN.md decision 13: the formats are declared by the files; --help names each and how it is declared.
    with pytest.raises(SystemExit):
        run.parser().parse_args(["--help"])
    text = capsys.readouterr().out
    for words in ("megatron  Megatron-LM's indexed dataset", "PREFIX.idx", "nanogpt   nanoGPT's token files",
                  "meta.pkl", "bytes     raw bytes, each byte one token id", "--data-format", "ptrain-data"):
        assert words in text, words
    flat = " ".join(text.split())  # argparse wraps the options' help to the terminal's width
    for words in ("--val-data DIR|PREFIX|FILE", "a separate validation source", "--sample-index {epochs,megatron}",
                  "Megatron-LM GPTDataset's document, sample and shuffle index", "--log-samples"):
        assert words in flat, words
