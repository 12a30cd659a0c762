"""The parsed-run cache: a hit gives the same analysis, any file change is a miss."""
from __future__ import annotations

import json
import os
import shutil

from analyzer import cache
from analyzer.analysis import analyze_paths
from analyzer.report import to_json
from analyzer.synth import generate_run


def _json(res) -> str:
    return json.dumps(to_json(res), default=str, sort_keys=True)


def test_hit_miss_and_invalidation(tmp_path):
    run = tmp_path / "run"
    generate_run(run, nranks=16, steps=4, fault="hang", fault_rank=5, seed=11)
    assert cache.load([run]) is None  # miss: nothing stored yet
    first = analyze_paths([run])
    assert (run / ".ncclscope-cache" / "collectives.parquet").exists()
    hit = cache.load([run])
    assert hit is not None
    assert hit.collectives.astype(str).equals(first.run.collectives.astype(str))
    assert _json(analyze_paths([run])) == _json(first) == _json(analyze_paths([run], cache=False))

    # a changed file (same size, new mtime) is a miss
    f = next(run.glob("*.nccl.log"))
    st = f.stat()
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert cache.load([run]) is None
    analyze_paths([run])
    assert cache.load([run]) is not None
    # a removed file is a miss, and the analysis sees the change
    victim = next(p for p in run.glob("*.nccl.log") if p != f)
    victim.unlink()
    assert cache.load([run]) is None
    assert len(analyze_paths([run]).run.job.processes) == 15


def test_read_only_folder_uses_user_cache(tmp_path, monkeypatch):
    src = tmp_path / "ro"
    generate_run(src, nranks=8, steps=2, seed=12)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    os.chmod(src, 0o555)
    try:
        analyze_paths([src])
        assert not (src / ".ncclscope-cache").exists()
        assert cache.load([src]) is not None
        assert any((tmp_path / "xdg" / "ncclscope").iterdir())
    finally:
        os.chmod(src, 0o755)


def test_damaged_entry_is_a_miss(tmp_path):
    run = tmp_path / "run"
    generate_run(run, nranks=8, steps=2, seed=13)
    analyze_paths([run])
    (run / ".ncclscope-cache" / "collectives.parquet").write_bytes(b"not parquet")
    assert cache.load([run]) is None
    assert analyze_paths([run]).decision.verdict.value == "healthy"
    shutil.rmtree(run / ".ncclscope-cache")


def test_findings_cached_and_table_read_on_demand(tmp_path, monkeypatch):
    run = tmp_path / "run"
    generate_run(run, nranks=8, steps=3, fault="hang", fault_rank=2, seed=14)
    first = analyze_paths([run])
    entry = cache.open_entry([run], want_analysis=True)
    assert entry is not None and entry.findings is not None
    assert entry.run._df is None  # the table is not read for a re-open with current findings
    assert entry.run.collectives.astype(str).equals(first.run.collectives.astype(str))
    again = analyze_paths([run])
    assert _json(again) == _json(first)
    # other detector code: the findings are computed again from the cached run, then stored
    monkeypatch.setattr(cache, "_ADIGEST", "other")
    assert cache.open_entry([run], want_analysis=True).findings is None
    assert _json(analyze_paths([run])) == _json(first)
    assert cache.open_entry([run], want_analysis=True).findings is not None
