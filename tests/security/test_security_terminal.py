"""Log text reaching the terminal: never parsed as rich markup, never carrying control characters.

gloo's real error message starts with ``[/__w/pytorch/pytorch/third_party/gloo/...pair.cc:534]``,
which rich reads as a closing tag (MarkupError); logs may also hold ESC / OSC sequences that would
recolour the terminal, retitle it or plant hyperlinks. The fixtures below are written in the shape
of torchrun's ``[rankN]:`` prefixed tracebacks with our own paths, hosts and ports.
"""
from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ncclscope.analysis import analyze_paths
from ncclscope.cli import main
from ncclscope.report import render_text
from rich.console import Console

ROOT = Path(__file__).resolve().parents[2]
GLOO = "[/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [10.20.3.4]:61234"
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def traceback_log(error: str, path: str = "/home/jo/train.py", rank: int = 3) -> str:
    lines = ["Traceback (most recent call last):", f'  File "{path}", line 88, in <module>', "    main()",
             f'  File "{path}", line 71, in main', "    dist.all_reduce(t)",
             ('  File "/opt/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", line 2501, '
              "in all_reduce"), "    work.wait()", f"RuntimeError: {error}"]
    return "".join(f"[rank{rank}]: {ln}\n" for ln in lines)


def render(folder: Path) -> str:
    buf = io.StringIO()
    render_text(analyze_paths([folder], cache=False), Console(file=buf, width=120, color_system=None,
                                                               force_terminal=False, highlight=False))
    return buf.getvalue()


def test_gloo_error_prints_in_analyze(tmp_path, capsys):
    (tmp_path / "stderr.log").write_text(traceback_log(GLOO))
    assert main(["analyze", str(tmp_path), "--no-progress", "--no-cache"]) == 0
    out = capsys.readouterr()
    assert "internal error" not in out.err and "MarkupError" not in out.err
    assert "VERDICT" in out.out


def test_gloo_error_in_every_field_of_the_report(tmp_path):
    """Whatever a detector makes of the line, each place the report prints it takes it as plain text."""
    import dataclasses

    from ncclscope.model import Evidence, Finding, Severity

    (tmp_path / "stderr.log").write_text(traceback_log(GLOO))
    res = analyze_paths([tmp_path], cache=False)
    res.findings = [Finding(kind="crash", severity=Severity.CRITICAL, message=f"rank 3 raised RuntimeError: {GLOO}",
                            ranks=(3,), hint=GLOO, evidence=(Evidence(file=GLOO, line=8, text=GLOO),))]
    res.decision = dataclasses.replace(res.decision, headline=GLOO)
    res.run.stacks[3] = GLOO
    res.run.problems.append(GLOO)
    buf = io.StringIO()
    render_text(res, Console(file=buf, width=400, color_system=None, force_terminal=False, highlight=False))
    out = buf.getvalue()
    assert out.count("pair.cc:534] Connection closed by peer") >= 6, out


def test_gloo_error_prints_at_the_end_of_run(tmp_path):
    """The real wrapper: a command that fails with gloo's message, then the report."""
    script = f"import sys\nsys.stderr.write({traceback_log(GLOO)!r})\nsys.exit(1)\n"
    p = subprocess.run([sys.executable, "-m", "ncclscope", "run", "--run-dir", str(tmp_path / "run"), "--no-hook",
                        "--", sys.executable, "-c", script], capture_output=True, text=True, timeout=600, cwd=ROOT,
                       check=False)
    assert p.returncode == 1, p.stderr
    assert "could not analyse" not in p.stderr and "MarkupError" not in p.stderr, p.stderr
    assert "VERDICT" in p.stderr


def test_escape_sequences_do_not_reach_the_terminal(tmp_path):
    evil = "\x1b]0;pwned\x07\x1b[2J\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\ \x9b31m\rover \u202eod"
    (tmp_path / "stderr.log").write_text(traceback_log(f"boom {evil}", path="/home/jo/tr\x1b[1main.py"))
    out = render(tmp_path)
    assert "boom" in out
    assert not CONTROL.search(out), repr(CONTROL.findall(out))
    assert "\u202e" not in out
    assert "\\x1b]0;pwned" in out  # shown, harmless, so the reader sees what the log held


def _hook_records(t: str) -> str:
    import json

    start = {"type": "start", "t": 1795985021.0, "rank": 1, "world": 2, "local_rank": 1, "host": t, "pid": 821,
             "backend": "nccl", "torch": t}
    stack = {"type": "stack", "t": 1795985029.4, "rank": 1, "reason": "stall", "where": t,
             "frames": [{"file": t, "line": 100, "func": t, "code": t}]}
    return json.dumps(start) + "\n" + json.dumps(stack) + "\n"


# (file name, its content with the field set to t): the places log text reaches the report from
FIELDS = [
    ("stderr.log", lambda t: traceback_log(f"error {t}")),
    ("stderr.log", lambda t: traceback_log("boom", path=f"/home/{t}/train.py")),
    ("node7.4242.nccl.log", lambda t: f"node7:4242:4250 [0] misc/socket.cc:50 NCCL WARN {t}\n"),
    ("node7.4242.nccl.log", lambda t: f"node7:4242:4242 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.7<0> {t}\n"
                                      f"node7:4242:4242 [0] NCCL INFO cudaDriverVersion 12040\n"),
    ("node7.4242.nccl.log", lambda t: f"node7:4242:4250 [0] NCCL INFO comm 0x55d1 rank 0 nranks 2 cudaDev 0 "
                                      f"nvmlDev 0 busId {t} commId 0x1234abcd - Init START\n"),
    ("stderr.log", lambda t: f"[E1201 10:00:00.000000000 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught "
                             f"collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, {t}) ran for "
                             "600000 milliseconds\n"),
    ("ncclscope-rank1.jsonl", _hook_records),
]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(field=st.sampled_from(range(len(FIELDS))), blob=st.binary(min_size=1, max_size=200))
def test_arbitrary_bytes_in_any_log_field_print_cleanly(tmp_path_factory, field, blob):
    folder = tmp_path_factory.mktemp("fuzz")
    name, make = FIELDS[field]
    text = blob.decode("latin-1").replace("\n", " ")  # one field: every byte but the line break
    content = make(text)
    # log lines carry the raw bytes; JSON records carry them as the JSON string of those bytes
    (folder / name).write_bytes(content.encode("latin-1", "replace") if not name.endswith(".jsonl")
                                else content.encode())
    try:
        out = render(folder)
    except Exception as e:  # noqa: BLE001 - an InputError (nothing readable) is fine; nothing else is
        from ncclscope.input_names import InputError

        assert isinstance(e, InputError), repr(e)
        return
    assert not CONTROL.search(out), repr(CONTROL.findall(out))
