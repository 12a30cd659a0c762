"""Dashboard units: pure figures on real corpus runs, the server-side store (uploads, limits, live
mode, log index), and the pages' render functions (what the thin callbacks return)."""
from __future__ import annotations

import base64
import io
import json
import shutil
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest
from dash import no_update
from ncclscope.analysis import analyze_paths
from ncclscope.dashboard import figures
from ncclscope.dashboard.app import create_app, is_loopback, live_update, poll_job
from ncclscope.dashboard.data import (
    RunStore,
    UploadError,
    filter_logs,
    log_index,
    newest_alert,
    page_with_line,
)
from ncclscope.model import Communicator, Connection, Process
from plotly.utils import PlotlyJSONEncoder


@pytest.fixture(scope="module")
def hang(corpus: Path):
    return analyze_paths([corpus / "hang_rank1_stuck"])


@pytest.fixture(scope="module")
def straggler(corpus: Path):
    return analyze_paths([corpus / "straggler_rank1"])


@pytest.fixture
def store(tmp_path: Path):
    rs = RunStore(tmp_path / "store")
    create_app(run_store=rs)  # registers the pages, so their modules can be imported
    yield rs
    rs.close()


def _js(component: object) -> str:
    return json.dumps(component, cls=PlotlyJSONEncoder)


def _data_url(blob: bytes) -> str:
    return "data:application/octet-stream;base64," + base64.b64encode(blob).decode()


# -- figures ------------------------------------------------------------------------------------------
def test_transport_classes() -> None:
    assert figures.transport_class("P2P/CUMEM/read") == "P2P/NVLink"
    assert figures.transport_class("SHM/direct/direct") == "SHM"
    assert figures.transport_class("NET/IB/0/GDRDMA") == "NET/IB"
    assert figures.transport_class("NET/Socket/0") == "NET/Socket"
    assert figures.transport_class(None) == "unknown"


def test_ring_tree_host_figures_colour_edges_by_transport(hang) -> None:
    comm = hang.run.communicators[0]
    ring = figures.ring_figure(comm, hang.run.job.processes, 0, highlight=[1])
    names = [t.name for t in ring.data]
    assert any(n.startswith("P2P/NVLink") for n in names)
    nodes = next(t for t in ring.data if t.name == "ranks")
    assert list(nodes.text) == ["r0 vm/GPU0", "r1 vm/GPU1"]
    assert list(nodes.marker.color) == ["#333", figures.STUCK_COLOR]  # the culprit in red
    # a 2-rank ring is drawn both ways (two arcs, each with its arrow), and the culprit's edges are marked
    stuck_edges = next(t for t in ring.data if t.name.startswith("edges of the culprit"))
    assert "(2)" in stuck_edges.name and len(ring.layout.annotations) == 2
    tree = figures.tree_figure(comm, hang.run.job.processes, 0)
    assert "tree, channel 0" in tree.layout.title.text
    edges = figures.host_edges(comm, hang.run.job.processes)
    assert edges.to_dict("records") == [{"host_a": "vm", "host_b": "vm", "transport": "P2P/NVLink", "edges": 72}]  # 24 rings x 2 + 24 trees


def test_host_view_aggregates_many_ranks() -> None:
    n, g = 64, 8
    order = tuple(range(n))
    conns = tuple(Connection(0, a, (a + 1) % n, "P2P/CUMEM" if a // g == ((a + 1) % n) // g else "NET/IB/0")
                  for a in range(n))
    comm = Communicator("c", n, {i: i for i in range(n)}, rings={0: order}, connections=conns)
    procs = [Process(f"h{r // g}", r, r, r % g) for r in range(n)]
    edges = figures.host_edges(comm, procs)
    inter = edges[edges.host_a != edges.host_b]
    assert set(inter.transport) == {"NET/IB"} and inter.edges.sum() == 8  # one hop between each pair of hosts
    fig = figures.host_figure(comm, procs, highlight=[9])
    assert fig.layout.title.text.startswith("hosts: 8, ranks: 64")
    assert list(fig.data[-1].marker.color).count(figures.STUCK_COLOR) == 1


def test_timeline_marks_waiting_and_never_joined_ranks(hang) -> None:
    from ncclscope.metrics.progress import states_at_stuck
    from ncclscope.metrics.timeline import pg_records

    stuck = hang.decision.stuck
    view = pg_records(hang.run.collectives, "0")
    states = states_at_stuck(hang.run, hang.findings, stuck)
    assert states == {0: "waiting in", 1: "never joined"}
    fig = figures.timeline_figure(view, [0, 1], stuck, states, "seq", "0")
    wait = next(t for t in fig.data if "waiting in it" in t.name)
    never = next(t for t in fig.data if "never joined" in t.name)
    assert list(wait.y) == [0] and list(never.y) == [1] and set(wait.x) == {126}
    assert fig.layout.yaxis.tickformat == "d" and fig.layout.yaxis.dtick == 1  # integer rank ticks
    timed = figures.timeline_figure(view, [0, 1], stuck, states, "time", "0")
    assert any("never joined" in t.name for t in timed.data)
    assert figures.timeline_figure(pg_records(hang.run.collectives, "nope"), [0, 1], pg="nope").layout.annotations


def test_best_records_keeps_one_row_per_collective(hang) -> None:
    from ncclscope.metrics.records import best_records

    df = hang.run.collectives
    best = best_records(df[df.pg == "0"])
    assert set(best.source.astype(str)) == {"fr"}
    assert not best.duplicated(["rank", "pg", "seq"]).any()


def test_time_share_and_busbw(straggler) -> None:
    from ncclscope.metrics.busbw import with_transport
    from ncclscope.metrics.share import run_busbw, time_share

    run = straggler.run
    tab = run_busbw(run)
    share = time_share(tab, "op")
    assert abs(share.share.sum() - 1) < 1e-9 and share.iloc[0].group == "allreduce"
    sizes = time_share(tab, "size")
    assert list(sizes.bucket) == sorted(sizes.bucket)
    frame = with_transport(tab, run.communicators, 2)
    ar = frame[frame.op == "allreduce"].iloc[0]
    assert ar.busbw == pytest.approx(ar.bytes / (ar.time_ms / 1e3) / 1e9 * 2 * (2 - 1) / 2)
    assert set(frame.transport) == {"P2P/NVLink"}
    ag = frame[frame.op == "allgather"]
    assert np.allclose(ag.busbw, ag.algbw * 0.5)
    tests = [{"test": "all_reduce_perf", "size": 1 << 20, "busbw": 100.0, "in_place": False},
             {"test": "all_reduce_perf", "size": 1 << 24, "busbw": 180.0, "in_place": False}]
    fig = figures.busbw_figure(frame, tests)
    assert any("reference" in (t.name or "") for t in fig.data)
    colours = {t.name.split(" over ")[0]: t.marker.color for t in fig.data if " over " in (t.name or "")}
    assert colours["allreduce"] == figures.op_color("allreduce") != colours["allgather"]  # one colour per op


def test_wait_heatmap_shows_the_straggler(straggler) -> None:
    from ncclscope.metrics.waiting import wait_matrix

    ranks, steps, wait = wait_matrix(straggler.run.collectives, "0")
    assert list(ranks) == [0, 1] and wait.shape == (2, len(steps))
    # the straggler arrives last, so it waits least; the other rank waits ~250 ms at the slow steps
    assert np.nanmedian(wait[1]) <= np.nanmedian(wait[0])
    assert np.nanmax(wait[0]) > 200
    fig = figures.wait_heatmap_figure(ranks, steps, wait, "0")
    assert "rank 1 waits least" in fig.layout.title.text
    assert fig.layout.yaxis.tickformat == "d"


# -- store: uploads, limits, archives ----------------------------------------------------------------
def test_upload_zip_is_unpacked_and_analysed(store: RunStore, corpus: Path) -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for p in sorted((corpus / "crash_rank1_exit").iterdir()):
            z.write(p, f"run/{p.name}")
    key = store.submit_upload(["../../etc/evil name.zip"], [_data_url(buf.getvalue())])
    store.wait(key)
    st = store.status(key)
    assert st["state"] == "done", st
    entry = store.get(key)
    assert entry.analysis.decision.verdict.value == "crash"
    assert all(store.workdir in p.parents for p in entry.files.values())  # nothing outside the upload folder
    assert not list(store.workdir.rglob("*.zip"))  # the archive itself is removed once unpacked


def test_upload_over_the_limit_is_refused(store: RunStore) -> None:
    with pytest.raises(UploadError, match="over the"):
        store.submit_upload(["big.log"], [_data_url(b"x" * 5000)], max_bytes=1000)
    assert not list(store.workdir.iterdir())


def test_upload_unreadable_reports_error(store: RunStore) -> None:
    key = store.submit_upload(["junk.bin"], [_data_url(bytes(range(256)) * 10)])
    store.wait(key)
    assert store.status(key)["state"] == "error"
    _, _, disabled, status = poll_job(store, key)
    assert disabled and "junk.bin" in str(status)


def test_zip_with_path_escape_is_refused(store: RunStore) -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("../escape.log", "NCCL INFO x")
    key = store.submit_upload(["bad.zip"], [_data_url(buf.getvalue())])
    store.wait(key)
    st = store.status(key)
    assert st["state"] == "error" and "climbs out" in st["message"]


# -- log index ------------------------------------------------------------------------------------------
def test_log_index_ranks_levels_and_paging(store: RunStore, corpus: Path) -> None:
    key = store.analyze([corpus / "hang_rank1_stuck"], "hang")
    df = log_index(store.get(key))
    nccl0 = df[df.file == "vm.2545.nccl.log"]
    assert set(nccl0["rank"]) == {0} and set(nccl0.level.astype(str)) <= {"INFO", "WARN"}
    coll = df[(df.subsys == "COLL")]
    assert len(coll) > 100
    err = filter_logs(df, file="stderr.log", levels=["ERROR"], ranks=[0])
    assert len(err) and all("[rank0]" in t or "rank0" in t for t in err.text)
    hit = filter_logs(df, search="seqnum=126")
    assert len(hit) >= 2
    page = page_with_line(df, "stderr.log", 9, 100)
    rows = df.iloc[page * 100:(page + 1) * 100]
    assert ((rows.file == "stderr.log") & (rows.line == 9)).any()


# -- pages (the functions the thin callbacks call) -----------------------------------------------------
def test_pages_render_hang_run(store: RunStore, corpus: Path) -> None:
    from ncclscope.dashboard.pages import hang, hotspots, logs, overview, timeline, topology

    key = store.analyze([corpus / "hang_rank1_stuck"], "hang")
    text = _js(overview.render(store, key))
    assert "HANG" in text and "rank 1" in text and "/logs?file=stderr.log" in text
    _opts, comm, view = topology.comm_options(store, key)
    assert comm == "0x2529223d14542a77" and view == "ring"
    assert topology.channel_options(store, key, comm, "ring")[1] == 0
    fig, _ = topology.figure(store, key, comm, "ring", 0)
    assert "ring, channel 0" in fig.layout.title.text
    assert timeline.pg_options(store, key)[1] == "0"
    body = _js(hang.render(store, key))
    assert "never joined #126" in body and "waiting in #126" in body
    assert hotspots.share(store, key, "pg").layout.title.text.endswith("process group")
    vol = hotspots.volume_fig(store, key, "op")  # bytes moved, not time: a volume says nothing in seconds
    assert vol.layout.title.text == "communication volume by operation" and "seconds" not in _js(vol)
    rows, _pages, _cur, info, _styles = logs.page(store, key, "stderr.log", None, None, None, None, 0,
                                               {"file": "stderr.log", "line": 9}, True)
    assert any(r["line"] == 9 for r in rows) and "highlighted (page 1 of" in info
    # unknown keys render a plain message, never an exception
    assert "No run loaded" in _js(overview.render(store, "nope"))


def test_settings_warnings(corpus: Path) -> None:
    from ncclscope.dashboard.components import settings_rows

    a = analyze_paths([corpus / "config_error_algo_tree"])
    rows = {r["name"]: r for r in settings_rows(a.run.job)}
    assert "NCCL_ALGO" in rows and rows["NCCL_ALGO"]["warning"]
    assert not rows["NCCL_DEBUG"]["warning"]


# -- live mode ----------------------------------------------------------------------------------------
def test_live_mode_reanalyses_on_change_and_shows_alert(store: RunStore, corpus: Path, tmp_path: Path) -> None:
    live = tmp_path / "live"
    live.mkdir()
    for name in ("stderr.log", "env.txt", "vm.2545.nccl.log", "vm.2546.nccl.log"):
        shutil.copy(corpus / "hang_rank1_stuck" / name, live / name)
    store.start_live(live)

    def settle() -> tuple[str | None, object]:
        deadline = time.time() + 600  # a safety net: the wait is on the event
        while time.time() < deadline:
            key, banner = live_update(store, None)
            if store._live_pending is None and key not in (None,):
                return key, banner
            time.sleep(0.05)
        raise AssertionError("live analysis never finished")

    first, banner = settle()
    assert "up to date" in _js(banner)
    assert live_update(store, first)[0] is no_update  # the page already shows the newest analysis
    # nothing changed: no new analysis
    store.live_poll()
    assert store._live_pending is None
    # a new file and an alert: re-analysed, banner shows the alert
    shutil.copy(corpus / "hang_rank1_stuck" / "fr_timeout_rank0", live / "fr_timeout_rank0")
    (live / "alerts.jsonl").write_text(json.dumps({"kind": "hang", "time": "t", "culprit_ranks": [1],
                                                   "message": "rank 1 never joined allreduce #126"}) + "\n")
    store.live_poll()
    second, banner = settle()
    assert second != first
    text = _js(banner)
    assert "ALERT" in text and "rank 1 never joined" in text
    assert store.get(second).analysis.decision.verdict.value == "hang"


def test_newest_alert_skips_partial_lines(tmp_path: Path) -> None:
    p = tmp_path / "alerts.jsonl"
    p.write_text('{"kind": "straggler"}\n{"kind": "hang"}\n{"kind": "ha')
    assert newest_alert(p) == {"kind": "hang"}
    assert newest_alert(tmp_path / "none.jsonl") is None


# -- serve command ------------------------------------------------------------------------------------
def test_serve_options_and_loopback(corpus: Path) -> None:
    from ncclscope.cli import main

    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.1.2.3")
    assert main(["serve", str(corpus / "hang_rank1_stuck"), "--live", str(corpus)]) == 2
    assert main(["serve", "--help"]) == 0


def test_pages_are_ready_while_the_log_index_builds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The analysis is published before the log view's index is built: the other pages render at once,
    the Logs page says it is indexing, and shows the lines once the index is there."""
    import threading

    from ncclscope.dashboard import data

    release = threading.Event()
    real = data.build_log_index

    def slow_index(entry, max_lines=data.MAX_LOG_LINES):  # type: ignore[no-untyped-def]
        release.wait(30)
        return real(entry, max_lines)

    monkeypatch.setattr(data, "build_log_index", slow_index)
    rs = RunStore(tmp_path / "store")
    create_app(run_store=rs)
    # the pages register themselves with the app: imported after it exists, whichever test ran first
    from ncclscope.dashboard.pages import hang, logs, overview
    try:
        sample = Path(__file__).resolve().parents[2] / "samples" / "gpu_hang"
        key = rs.submit([sample], "gpu_hang")
        deadline = time.time() + 600  # a safety net: the wait is on the event
        while rs.get(key) is None and time.time() < deadline:
            time.sleep(0.05)
        assert rs.get(key) is not None and rs.status(key)["state"] == "done"
        assert "HANG" in _js(overview.render(rs, key)) and "never joined #125" in _js(hang.render(rs, key))
        rows, _, _, info, _ = logs.page(rs, key, None, None, None, None, None, 0, None, True)
        assert rows == [] and "indexing log lines" in info
        release.set()
        rs.wait(key)
        rows, _, _, info, _ = logs.page(rs, key, None, None, None, None, None, 0, None, True)
        assert len(rows) == 100 and " of " in info
    finally:
        release.set()
        rs.close()
