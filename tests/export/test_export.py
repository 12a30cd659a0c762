"""`ncclscope export`: the Perfetto (Chrome trace-event) file and the Prometheus text, checked against
their formats: trace events counted per track, the exposition parsed by prometheus_client's parser."""
from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest
from ncclscope.analysis import analyze_paths
from ncclscope.cli import main
from ncclscope.export import write_atomic
from ncclscope.export.perfetto import trace_events
from ncclscope.export.prometheus import prometheus_text
from ncclscope.metrics.progress import pg_status_by_rank
from ncclscope.metrics.records import best_records, pg_choices
from ncclscope.synth import generate_run

ROOT = Path(__file__).resolve().parents[2]
GPU_HANG = ROOT / "samples" / "gpu_hang"
PHASES = {"X", "M", "i"}


@pytest.fixture(scope="module")
def gpu_hang():
    return analyze_paths([GPU_HANG], cache=False)


def check_trace_format(trace: dict) -> None:
    """The trace-event format's rules for the phases written: X has ts and dur (us, >= 0), M names a
    process or thread, i has a scope; pid and tid are integers."""
    assert isinstance(trace["traceEvents"], list) and trace["displayTimeUnit"] in ("ms", "ns")
    for ev in trace["traceEvents"]:
        assert ev["ph"] in PHASES and isinstance(ev["name"], str)
        assert isinstance(ev["pid"], int) and isinstance(ev["tid"], int)
        if ev["ph"] == "X":
            assert isinstance(ev["ts"], (int, float)) and ev["ts"] >= 0 and ev["dur"] > 0
        elif ev["ph"] == "M":
            assert ev["name"] in ("process_name", "thread_name", "process_sort_index") and "args" in ev
        else:
            assert ev["s"] in ("t", "p", "g")


def test_perfetto_tracks_and_slices(gpu_hang, tmp_path: Path) -> None:
    out = tmp_path / "trace.json"
    assert main(["export", str(GPU_HANG), "--perfetto", str(out), "--no-cache"]) == 0
    trace = json.loads(out.read_text())
    check_trace_format(trace)
    evs = trace["traceEvents"]
    df = gpu_hang.run.collectives
    pgs = pg_choices(df)
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in evs if e["name"] == "thread_name"}
    assert len(names) == 2 * len(pgs)  # one track per rank and process group
    procs = {e["pid"]: e["args"]["name"] for e in evs if e["name"] == "process_name"}
    assert procs == {0: "rank 0", 1: "rank 1 (culprit)"}
    slices = [e for e in evs if e["ph"] == "X"]
    assert len(slices) == sum(len(best_records(df[df.pg.astype(str) == pg])) for pg in pgs)
    per_track = Counter((e["pid"], e["tid"]) for e in slices)
    assert set(per_track) <= set(names)
    stuck = [e for e in slices if e["args"]["stuck"]]
    assert [(e["pid"], e["args"]["seq"], e["args"]["op"]) for e in stuck] == [(0, 125, "allreduce")]
    assert stuck[0]["name"] == "STUCK allreduce #125" and stuck[0]["args"]["bytes"] == 4196352 * 4
    never = [e for e in evs if e["ph"] == "i"]
    assert [(e["pid"], e["name"]) for e in never] == [(1, "never joined #125")]
    assert trace["otherData"]["verdict"] == "hang" and trace["otherData"]["culprit_ranks"] == [1]


def test_perfetto_without_timestamps_lays_out_by_sequence(tmp_path: Path) -> None:
    generate_run(tmp_path / "run", nranks=4, steps=3, timestamps=False, fault="hang")
    a = analyze_paths([tmp_path / "run"], cache=False)
    trace = trace_events(a)
    check_trace_format(trace)
    assert trace["otherData"]["clock"] == "one slot per sequence number"
    slices = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert len(slices) == len(a.run.collectives)
    assert all(e["ts"] == e["args"]["seq"] * 1000.0 for e in slices)


def test_prometheus_text_parses_and_matches_the_status(gpu_hang, tmp_path: Path) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    out = tmp_path / "ncclscope.prom"
    assert main(["export", str(GPU_HANG), "--prometheus", str(out), "--no-cache"]) == 0
    fams = {f.name: f for f in text_string_to_metric_families(out.read_text())}
    status = pg_status_by_rank(gpu_hang.run)
    enq = {(s.labels["rank"], s.labels["pg"]): s.value for s in fams["ncclscope_rank_last_enqueued_seq"].samples}
    assert enq == {(str(r), pg): float(st.enqueued) for pg, by in status.items() for r, st in by.items()
                   if st.enqueued is not None}
    assert enq[("1", "0")] < enq[("0", "0")]  # the rank that never joined is behind
    since = {s.labels["rank"]: s.value for s in fams["ncclscope_rank_seconds_since_progress"].samples
             if s.labels["pg"] == "0"}
    assert since["1"] > 0 and since["0"] >= 0
    verdict = {s.labels["verdict"]: s.value for s in fams["ncclscope_verdict"].samples}
    assert verdict["hang"] == 1.0 and sum(verdict.values()) == 1.0
    assert [s.labels["rank"] for s in fams["ncclscope_culprit_rank"].samples] == ["1"]
    alerts = {s.labels["kind"]: s.value for s in fams["ncclscope_alerts"].samples}
    kinds = Counter(json.loads(x)["kind"] for x in (GPU_HANG / "alerts.jsonl").read_text().splitlines() if x.strip())
    assert alerts == {k: float(n) for k, n in kinds.items()}
    assert fams["ncclscope_stuck_seq"].samples[0].value == 125.0


def test_prometheus_label_values_are_escaped(gpu_hang) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    text = prometheus_text(gpu_hang, alerts=[{"kind": 'odd "kind"\\ with\nnewline'}], now=2e9)
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    assert [s.labels["kind"] for s in fams["ncclscope_alerts"].samples] == ['odd "kind"\\ with\nnewline']


def test_write_atomic_refuses_links(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("keep")
    link = tmp_path / "out.prom"
    os.symlink(target, link)
    with pytest.raises(OSError, match="symbolic link"):
        write_atomic(link, "x")
    assert target.read_text() == "keep"
    write_atomic(tmp_path / "fresh.prom", "y\n")
    assert (tmp_path / "fresh.prom").read_text() == "y\n" and not list(tmp_path.glob(".*.tmp"))


def test_export_needs_an_output(tmp_path: Path) -> None:
    assert main(["export", str(GPU_HANG)]) == 2


def test_dashboard_serves_metrics_of_the_newest_analysis(tmp_path: Path) -> None:
    """`serve` answers /metrics with the text format (behind the token like every other request); in live
    mode it is the newest analysis of the folder with its alerts."""
    import shutil
    import time

    from ncclscope.dashboard.app import create_app
    from ncclscope.dashboard.data import RunStore
    from prometheus_client.parser import text_string_to_metric_families

    live = tmp_path / "live"
    shutil.copytree(GPU_HANG, live)
    rs = RunStore(tmp_path / "store")
    app = create_app(live=live, run_store=rs, token="t0ken")
    try:
        client = app.server.test_client()
        assert client.get("/metrics").status_code == 403
        client.get("/?token=t0ken")
        deadline = time.time() + 600  # a safety net: the wait is on the event
        resp = client.get("/metrics")
        while resp.status_code == 503 and time.time() < deadline:
            time.sleep(0.2)
            resp = client.get("/metrics")
        assert resp.status_code == 200 and resp.mimetype == "text/plain"
        fams = {f.name: f for f in text_string_to_metric_families(resp.get_data(as_text=True))}
        assert [s.labels["rank"] for s in fams["ncclscope_culprit_rank"].samples] == ["1"]
        assert {s.labels["kind"] for s in fams["ncclscope_alerts"].samples} == {"hang", "hang_detail"}
    finally:
        rs.close()
