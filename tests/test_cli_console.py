"""Output that is not a terminal (a pipe, a file, ``tee``) gets full lines: rich's 80-column wrap cut the
headline, the fix hints and the evidence of a piped report in pieces."""
from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, SAMPLES

from ncclscope.consoles import PIPE_WIDTH, box_console, full_line_console


def _analyze(*args: str, columns: str | None = None) -> str:
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("COLUMNS", None)
    if columns is not None:
        env["COLUMNS"] = columns
    res = subprocess.run([sys.executable, "-m", "ncclscope", "analyze", *args], env=env, capture_output=True,
                         text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    return res.stdout


def test_piped_report_prints_the_headline_and_hints_on_one_line_each() -> None:
    sample = str(SAMPLES / "gpu_hang")
    report = json.loads(_analyze("--json", sample))
    assert len(report["headline"]) > 120  # long enough that an 80-column wrap would cut it
    text = _analyze(sample)
    lines = text.splitlines()
    assert lines[0] == f"VERDICT: {report['verdict'].upper()}  {report['headline']}"
    for f in report["findings"]:
        head = next(i for i, x in enumerate(lines)  # the finding's one line, its whole message on it
                    if x.startswith(f"{f['severity'].upper():8} {f['kind']}") and x.endswith(f": {f['message']}"))
        if f["hint"]:
            assert lines[head + 1].strip() == f"fix: {f['hint']}"
    assert max(map(len, lines)) > 200


def test_a_columns_the_user_set_still_wraps() -> None:
    text = _analyze(str(SAMPLES / "gpu_hang"), columns="70")
    assert max(map(len, text.splitlines())) <= 70


def test_consoles_by_where_they_print(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)  # a width the user set wins (another test's may linger)
    piped = full_line_console(file=io.StringIO())
    assert piped.width == PIPE_WIDTH and piped.soft_wrap
    term = full_line_console(file=io.StringIO(), force_terminal=True, width=100)
    assert term.width == 100 and not term.soft_wrap
    assert box_console(file=io.StringIO()).width == 80  # panels that fill the width stay rich's size


def test_full_line_console_prints_a_long_line_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    buf = io.StringIO()
    full_line_console(file=buf, highlight=False).print("word " * 100)
    assert buf.getvalue().count("\n") == 1


@pytest.mark.parametrize("folder", ["analyzer/commands", "analyzer"])
def test_every_command_console_comes_from_consoles_py(folder: str) -> None:
    """A ``Console(`` made anywhere else in the commands would wrap at 80 columns when piped again (the live
    monitor's own default console draws alert boxes, which must keep rich's width)."""
    made = []
    for p in sorted((ROOT / folder).rglob("*.py")):
        rel = p.relative_to(ROOT).as_posix()
        if rel in ("analyzer/consoles.py",) or rel.startswith("analyzer/live/"):
            continue
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"\bConsole\(", line) and not line.lstrip().startswith("#"):
                made.append(f"{rel}:{n}: {line.strip()}")
    assert made == []
