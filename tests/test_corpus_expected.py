"""`ncclscope analyze <run> --json` on every real run agrees with EXPECTED.json."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import CORPUS, ROOT, corpus_runs


def _analyze(path) -> dict:
    p = subprocess.run([sys.executable, "-m", "ncclscope", "analyze", str(path), "--json"], cwd=ROOT,
                       capture_output=True, text=True, timeout=600, check=False)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@pytest.mark.parametrize("case", corpus_runs())
def test_corpus_run_matches_expected(case, expected):
    want = expected[case]
    got = _analyze(CORPUS / case)
    assert got["verdict"] == want["verdict"], got["headline"]
    if "culprit_ranks" in want:
        assert sorted(got["culprit_ranks"]) == want["culprit_ranks"]
    if "stuck" in want:
        assert got["stuck"]["pg"] == want["stuck"]["pg"] and got["stuck"]["seq"] == want["stuck"]["seq"]
    job = got["job"]
    if "world_size" in want:
        assert job["world_size"] == want["world_size"]
    if "nccl_version" in want:
        assert job["nccl_version"] == want["nccl_version"]
    if "communicators" in want:
        assert len(got["communicators"]) == want["communicators"]
    if "transport" in want:
        assert any(want["transport"] in t for c in got["communicators"] for t in c["transports"])
    if "finding" in want:
        assert any(f["kind"] == want["finding"] and sorted(f["ranks"]) == want["ranks"] for f in got["findings"])
    if "mentions" in want:
        assert want["mentions"] in json.dumps(got["findings"])
    # the contract: unknown values are null, never missing keys
    for key in ("verdict", "culprit_ranks", "stuck", "findings", "job", "communicators"):
        assert key in got
    for f in got["findings"]:
        assert {"kind", "severity", "ranks", "message", "hint", "evidence"} <= set(f)


def test_json_output_is_only_json_on_stdout(corpus):
    p = subprocess.run([sys.executable, "-m", "ncclscope", "analyze", str(corpus / "hang_rank1_stuck"), "--json"],
                       cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout)  # the whole of stdout is one JSON object: nothing printed beside it
    assert isinstance(got, dict) and got["verdict"] == "hang"


def test_unreadable_input_exits_2_with_one_line(tmp_path):
    junk = tmp_path / "junk.bin"
    junk.write_bytes(bytes(range(256)) * 100)
    p = subprocess.run([sys.executable, "-m", "ncclscope", "analyze", str(junk)], cwd=ROOT, capture_output=True,
                       text=True, timeout=600, check=False)
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1 and "Traceback" not in p.stderr
    p = subprocess.run([sys.executable, "-m", "ncclscope", "analyze", str(tmp_path / "missing")], cwd=ROOT,
                       capture_output=True, text=True, timeout=600, check=False)
    assert p.returncode == 2 and "no such file" in p.stderr
