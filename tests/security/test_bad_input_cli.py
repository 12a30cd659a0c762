"""``ncclscope analyze`` on every class of bad input: never a traceback; exit 0 when the analysis
ran, 2 with exactly one line on stderr when nothing was readable (docs/interfaces.md)."""
from __future__ import annotations

import base64
import json
import os
import pickle
import random
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from ncclscope.cli import main

NCCL = (b"vm:7:7 [0] NCCL INFO NCCL version 2.28.9+cuda13.0\n"
        b"vm:7:7 [0] NCCL INFO ncclCommInitRankConfig comm 0x5 rank 0 nranks 1 cudaDev 0 nvmlDev 0 busId 1000 "
        b"commId 0x9 - Init COMPLETE\n")


class Boom:
    def __reduce__(self):
        return os.system, ("echo PWNED",)


def _write(tmp: Path, name: str, data: bytes) -> Path:
    p = tmp / name
    p.write_bytes(data)
    return p


# (files to create, expected exit, words expected on stderr when exit is 2)
CASES = {
    "empty file": ({"a.log": b""}, 2, "nothing readable"),
    "empty folder": ({}, 2, "no files found"),
    "binary junk": ({"core": bytes(range(256)) * 64}, 2, "binary content"),
    "only NUL bytes": ({"a.log": b"\0" * 100_000}, 2, "nothing readable"),
    "truncated pickle": ({"fr_timeout_rank0": pickle.dumps({"entries": list(range(100))})[:50]}, 2,
                         "not a readable pickle"),
    "malicious pickle alone": ({"fr_timeout_rank0": pickle.dumps(Boom())}, 2, "refused: the pickle asks for"),
    "broken JSON": ({"fr_rank0.json": b'{"entries": [1, 2'}, 2, "nothing readable"),
    "deep JSON": ({"x.json": b"[" * 100_000 + b"]" * 100_000}, 2, "nothing readable"),
    "XML with entities": ({"topo.xml": b'<?xml version="1.0"?><!DOCTYPE s [<!ENTITY a "aaaaaaaaaa"><!ENTITY b '
                                       b'"&a;&a;&a;&a;&a;&a;&a;">]><system>&b;</system>'}, 2, "DOCTYPE or entities"),
    "JSON lines all broken": ({"ncclscope-rank0.jsonl": b'{"type": "coll", "seq": \n{"type\n{\n'}, 2,
                              "nothing readable"),
    "invalid UTF-8 log": ({"a.log": b"\xff\xfe\xc0" * 50 + b"\n" + NCCL.replace(b"INFO ", b"INFO \xff", 1)}, 0, ""),
    "CRLF log": ({"a.log": NCCL.replace(b"\n", b"\r\n")}, 0, ""),
    "NUL-riddled log": ({"a.log": b"\0" * 5000 + b"\n" + NCCL + b"\0" * 5000}, 0, ""),
    "one 2 MB line": ({"a.log": b"x" * 2_000_000 + b"\n" + NCCL}, 0, ""),
    "truncated last line": ({"a.log": NCCL + NCCL[:40]}, 0, ""),
    "log plus junk files": ({"a.log": NCCL, "core": bytes(range(256)) * 64, "b.json": b"{"}, 0, ""),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input_class(name, tmp_path, capsys):
    files, want_rc, words = CASES[name]
    d = tmp_path / "in"
    d.mkdir()
    for fn, data in files.items():
        _write(d, fn, data)
    target = d if len(files) != 1 else d / next(iter(files))
    rc = main(["analyze", str(target)])
    out, err = capsys.readouterr()
    assert "Traceback" not in err + out
    assert rc == want_rc, err
    if rc == 2:
        assert err.count("\n") == 1 and err.startswith("ncclscope: ") and words in err, err
    else:
        assert "VERDICT" in out


def test_fifo_and_symlinks_in_a_folder_are_skipped_not_followed(tmp_path, capsys):
    d = tmp_path / "in"
    d.mkdir()
    _write(d, "a.log", NCCL)
    os.mkfifo(d / "pipe.log")  # opening it would block forever (pytest's timeout would fail the test)
    (d / "passwd.log").symlink_to("/etc/passwd")
    assert main(["analyze", str(d), "--json"]) == 0
    out = capsys.readouterr().out
    report = json.loads(out)
    assert "root:" not in out  # the link's target was not read
    assert [f["file"] for f in report["inputs"] if f["format"] != "skipped"] == ["a.log"]
    problems = " | ".join(report["problems"])  # every skipped path is named, with why
    assert "passwd.log: a symbolic link, not followed; skipped" in problems
    assert "pipe.log: a FIFO, not a regular file; skipped" in problems


def test_missing_path_and_mixed_paths(tmp_path, capsys):
    good = _write(tmp_path, "a.log", NCCL)
    assert main(["analyze", str(good), str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such file or folder" in err


def test_cli_subprocess_never_prints_a_traceback(tmp_path):
    for name in ("malicious pickle alone", "deep JSON", "invalid UTF-8 log"):
        files, want_rc, _ = CASES[name]
        d = tmp_path / name.replace(" ", "_")
        d.mkdir()
        for fn, data in files.items():
            _write(d, fn, data)
        p = subprocess.run([sys.executable, "-m", "ncclscope", "analyze", str(d)], cwd=ROOT, capture_output=True,
                           text=True, timeout=600, check=False)  # a safety net
        assert p.returncode == want_rc and "Traceback" not in p.stderr, p.stderr
        assert "PWNED" not in p.stdout


# the analysis' peak memory and CPU seconds (its own and its reaped workers'), from its rusage: CPU time, not the
# wall clock, which on a loaded machine counts other processes' turns (61 s of it for 15 s of CPU at a load of 10)
MEASURE = """
import resource, subprocess, sys
p = subprocess.run([sys.executable, "-m", "ncclscope", "analyze", sys.argv[1], "--no-progress"],
                   capture_output=True, text=True)
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(p.returncode, ru.ru_maxrss, ru.ru_utime + ru.ru_stime)
print(p.stderr)
"""


def test_200_mb_of_junk_is_read_in_bounded_memory_and_time(tmp_path):
    # 1 MB of printable junk, the same every run: a rule that fires on junk fails here every time, not one run in 20
    block = base64.b64encode(random.Random(124).randbytes(3 << 18))
    lines = b"\n".join(block[i:i + 4096] for i in range(0, len(block), 4096)) + b"\n"
    big = tmp_path / "junk.log"
    with open(big, "wb") as f:
        # and one 1 MB line
        f.writelines(lines if i != 100 else b"NCCL INFO " + lines.replace(b"\n", b"") for i in range(200))
    assert big.stat().st_size > 200 * 10**6
    p = subprocess.run([sys.executable, "-c", MEASURE, str(big)], cwd=ROOT, capture_output=True, text=True,
                       timeout=600, check=False)  # a safety net for a stuck analysis
    rc, rss_kb, cpu_s = p.stdout.split("\n", 1)[0].split()
    assert int(rc) == 2 and "Traceback" not in p.stdout, p.stdout  # nothing readable in junk
    assert int(rss_kb) < 500 * 1024, f"peak RSS {int(rss_kb) // 1024} MB"
    assert float(cpu_s) < 60, f"{float(cpu_s):.1f} CPU seconds"
