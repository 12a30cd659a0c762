"""The run cache is the user's own: a cache that arrives with the input is never read (it could forge
the verdict of a real hang), a cache folder others can write is not used, and a damaged entry (a
FIFO, 200,000 levels of nesting, a value of the wrong type) is a miss, never a hang or a crash."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from ncclscope import cache
from ncclscope.analysis import analyze_paths

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"


def _copy(name: str, dest: Path) -> Path:
    shutil.copytree(SAMPLES / name, dest, ignore=shutil.ignore_patterns(".ncclscope-cache"))
    return dest


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))


def _forge(victim: Path, donor: Path, tmp_path: Path) -> None:
    """A healthy run's entry, re-keyed to the victim's files, shipped inside the victim folder as
    ``.ncclscope-cache`` (the layout ncclscope used to read), as an attacker would plant it."""
    analyze_paths([donor])
    entry = cache.cache_dir([donor])
    forged = victim / cache.CACHE_DIRNAME
    shutil.rmtree(forged, ignore_errors=True)
    shutil.copytree(entry, forged)
    key = json.loads((forged / "key.json").read_text())
    key["files"] = cache.input_key([victim])  # the best key an attacker could write
    (tmp_path / "key-now.json").write_text(json.dumps(key))
    # and the same under the in-folder key format (path, size, mtime) ncclscope used before
    key["files"] = [row[:3] for row in key["files"]]
    (tmp_path / "key-legacy.json").write_text(json.dumps(key))


def test_cache_shipped_with_the_input_cannot_forge_a_real_hang(tmp_path):
    victim = tmp_path / "gpu_hang"
    _copy("gpu_hang", victim)
    donor = tmp_path / "gpu_healthy"
    _copy("gpu_healthy", donor)
    _forge(victim, donor, tmp_path)
    for name in ("key-now.json", "key-legacy.json"):
        shutil.copyfile(tmp_path / name, victim / cache.CACHE_DIRNAME / "key.json")
        res = analyze_paths([victim])
        assert res.decision.verdict.value == "hang", res.decision.headline
        assert res.decision.culprit_ranks
    from ncclscope.cli import main

    assert main(["analyze", str(victim), "--json", "--no-progress"]) == 0


def test_analysis_writes_nothing_into_the_analysed_folder(tmp_path):
    run = tmp_path / "run"
    _copy("gpu_hang", run)
    before = sorted(str(p.relative_to(run)) for p in run.rglob("*"))
    analyze_paths([run])
    analyze_paths([run])
    assert sorted(str(p.relative_to(run)) for p in run.rglob("*")) == before
    assert cache.open_entry([run]) is not None  # the entry is in the user's cache instead


def test_cache_folder_others_can_write_is_not_used(tmp_path):
    run = tmp_path / "run"
    _copy("gpu_hang", run)
    base = tmp_path / "xdg" / "ncclscope"
    base.mkdir(parents=True)
    os.chmod(base, 0o777)
    res = analyze_paths([run])
    assert res.decision.verdict.value == "hang"
    assert not (base / "runs").exists()  # nothing stored in a folder others could plant entries in
    os.chmod(base, 0o700)
    analyze_paths([run])
    assert os.stat(base / "runs").st_mode & 0o777 == 0o700
    assert cache.open_entry([run]) is not None


def test_entry_replaced_by_a_link_is_a_miss(tmp_path):
    run = tmp_path / "run"
    _copy("gpu_hang", run)
    analyze_paths([run])
    d = cache.cache_dir([run])
    moved = tmp_path / "elsewhere"
    shutil.move(d, moved)
    d.symlink_to(moved)
    assert cache.open_entry([run]) is None and cache.open_report([run]) is None
    assert analyze_paths([run]).decision.verdict.value == "hang"


FIFO_SCRIPT = """
import sys
from pathlib import Path
from ncclscope.analysis import analyze_paths
from ncclscope import cache
print(analyze_paths([Path(sys.argv[1])]).decision.verdict.value, cache.open_report([Path(sys.argv[1])]))
"""


@pytest.mark.parametrize("name", ["key.json", "run.json", "analysis.json", "events.json", "report.json",
                                  "collectives.parquet"])
def test_fifo_in_a_cache_file_is_a_miss_not_a_hang(tmp_path, name):
    run = tmp_path / "run"
    _copy("gpu_hang", run)
    analyze_paths([run])
    target = cache.cache_dir([run]) / name
    target.unlink()
    os.mkfifo(target)
    p = subprocess.run([sys.executable, "-c", FIFO_SCRIPT, str(run)], capture_output=True, text=True, timeout=600,
                       cwd=ROOT, check=False, env=dict(os.environ))
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("hang"), p.stdout


@pytest.mark.parametrize("name", ["key.json", "run.json", "analysis.json", "events.json"])
@pytest.mark.parametrize("content", ["[" * 200_000 + "]" * 200_000, '{"__dc__": "Finding", "kind": []}',
                                     '["not", "a", "dict"]', '{"code": 1, "findings": "x", "decision": 3}',
                                     '{"__rows__": "Nope", "fields": 1, "rows": 2}', "null"])
def test_deep_or_wrongly_typed_entry_is_a_miss(tmp_path, name, content):
    run = tmp_path / "run"
    _copy("gpu_hang", run)
    first = analyze_paths([run])
    (cache.cache_dir([run]) / name).write_text(content)
    if name == "analysis.json":  # current code, wrong content
        content_obj = {"code": cache.analysis_digest(), "findings": "x", "decision": 3}
        (cache.cache_dir([run]) / name).write_text(json.dumps(content_obj) if content.startswith('{"code"') else content)
    res = analyze_paths([run])
    assert res.decision.verdict == first.decision.verdict
    from ncclscope.report import json_text

    json_text(res)  # the report can be made from it
