"""The parsed-run cache: a hit gives the same analysis, any file change is a miss."""
from __future__ import annotations

import json
import os
import shutil

import pytest

from ncclscope import cache
from ncclscope.analysis import analyze_paths
from ncclscope.report import to_json
from ncclscope.synth import generate_run


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    """Every test its own user cache ($XDG_CACHE_HOME), as a user's ~/.cache would be."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))


def _json(res) -> str:
    return json.dumps(to_json(res), default=str, sort_keys=True)


def test_hit_miss_and_invalidation(tmp_path):
    run = tmp_path / "run"
    generate_run(run, nranks=16, steps=4, fault="hang", fault_rank=5, seed=11)
    assert cache.load([run]) is None  # miss: nothing stored yet
    before = sorted(p.name for p in run.iterdir())
    first = analyze_paths([run])
    assert (cache.cache_dir([run]) / "collectives.parquet").exists()
    assert sorted(p.name for p in run.iterdir()) == before  # nothing written into the analysed folder
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
    assert len([p for p in analyze_paths([run]).run.job.processes if p.pid]) == 15  # NCCL processes


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
    (cache.cache_dir([run]) / "collectives.parquet").write_bytes(b"not parquet")
    assert cache.load([run]) is None
    assert analyze_paths([run]).decision.verdict.value == "healthy"
    shutil.rmtree(cache.cache_dir([run]))


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


def test_lazy_events_timeline_and_cut_tables(tmp_path):
    run = tmp_path / "run"
    generate_run(run, nranks=8, steps=3, fault="crash", fault_rank=3, seed=15)
    first = analyze_paths([run])
    entry = cache.open_entry([run], want_analysis=True)
    assert entry.run._events is None  # not read for a re-open with current findings
    assert entry.run.timeline_summary() == first.run.timeline_summary() != []
    assert entry.run._df is None  # the summary read two columns, not the table
    assert [e.text for e in entry.run.events] == [e.text for e in first.run.events]
    # events damaged after the entry was opened: no events and a plain problem, never an exception
    entry = cache.open_entry([run], want_analysis=True)
    (cache.cache_dir([run]) / "events.json").write_text("{cut")
    assert entry.run.events == [] and "cached events unreadable" in entry.run.problems[-1]
    # a Parquet table cut short is a miss at open time
    shutil.rmtree(cache.cache_dir([run]))
    analyze_paths([run])
    table = cache.cache_dir([run]) / "collectives.parquet"
    table.write_bytes(table.read_bytes()[:-100])
    assert cache.open_entry([run], want_analysis=True) is None


def test_cached_json_reopen_imports_no_pandas(tmp_path):
    """The re-open a script or CI job does (analyze --json on an unchanged folder) stays light."""
    import subprocess
    import sys

    run = tmp_path / "run"
    generate_run(run, nranks=8, steps=3, fault="hang", fault_rank=2, seed=16)
    analyze_paths([run])
    code = ("import sys, io, contextlib\nfrom ncclscope.cli import main\nout = io.StringIO()\n"
            f"with contextlib.redirect_stdout(out): rc = main(['analyze', {str(run)!r}, '--json', '--no-progress'])\n"
            "print(rc, sorted(m for m in ('pandas', 'pyarrow', 'numpy') if m in sys.modules), out.getvalue()[:40])")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                       cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert p.stdout.startswith("0 [] {\"verdict\": \"hang\""), p.stdout + p.stderr


def test_json_reopen_prints_the_stored_line_until_anything_changes(tmp_path, monkeypatch, capsys):
    from ncclscope.cli import main
    from ncclscope.report import json_text

    run = tmp_path / "run"
    generate_run(run, nranks=8, steps=3, fault="hang", fault_rank=4, seed=17)
    fresh = analyze_paths([run], cache=False)
    assert cache.open_report([run]) is None  # nothing stored yet
    assert main(["analyze", str(run), "--json", "--no-progress"]) == 0
    first = capsys.readouterr().out
    assert first == json_text(fresh) + "\n"
    assert cache.open_report([run]) == first.rstrip("\n")
    assert main(["analyze", str(run), "--json", "--no-progress"]) == 0
    assert capsys.readouterr().out == first  # served from report.json
    # other report or detector code: the stored line is stale
    monkeypatch.setattr(cache, "_RDIGEST", "other")
    assert cache.open_report([run]) is None
    monkeypatch.setattr(cache, "_RDIGEST", None)
    # a changed input file: stale too, and the new analysis replaces it
    f = next(run.glob("*.nccl.log"))
    f.write_text(f.read_text() + "\n")
    assert cache.open_report([run]) is None
    assert main(["analyze", str(run), "--json", "--no-progress"]) == 0
    assert capsys.readouterr().out == json_text(analyze_paths([run], cache=False)) + "\n"
    assert cache.open_report([run]) is not None
