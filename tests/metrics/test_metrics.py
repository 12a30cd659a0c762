"""ncclscope.metrics: one set of numbers for the detectors, the text report and the dashboard."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from ncclscope.analysis import analyze_paths
from ncclscope.metrics.progress import NEVER_JOINED, WAITING, rank_status, states_at_stuck
from ncclscope.metrics.records import best_records
from ncclscope.metrics.share import busbw_table, one_row_per_collective, time_share, volume
from ncclscope.metrics.timeline import STUCK_NEVER, pg_records, progress_matrix
from ncclscope.model import COLLECTIVE_COLUMNS, Stuck
from ncclscope.synth import generate_run
from plotly.utils import PlotlyJSONEncoder

ROOT = Path(__file__).resolve().parents[2]
GPU_HANG = ROOT / "samples" / "gpu_hang"


@pytest.fixture(scope="module")
def gpu_hang():
    return analyze_paths([GPU_HANG], cache=False)


@pytest.fixture
def store(tmp_path: Path):
    from ncclscope.dashboard.app import create_app
    from ncclscope.dashboard.data import RunStore

    rs = RunStore(tmp_path / "store")
    create_app(run_store=rs)
    yield rs
    rs.close()


def test_hotspots_page_and_text_report_give_the_same_numbers(gpu_hang, store) -> None:
    """The bundled GPU hang: the report's hotspot line and the Hotspots page quote one table."""
    from ncclscope.dashboard.pages import hotspots
    from ncclscope.report import render_text
    from rich.console import Console

    console = Console(record=True, width=400)
    render_text(gpu_hang, console)
    report = console.export_text()
    quoted = re.findall(r"(\w+) of ~2\^(\d+) B on pg (\S+): (\d+)% \((\d+) calls\)", report)
    assert quoted[0][:2] == ("allreduce", "25") and quoted[0][3] == "54"
    key = store.analyze([GPU_HANG], "gpu_hang")
    fig = hotspots.share(store, key, "top")
    for (op, bucket, pg, pct, calls), label, share, text in zip(quoted, fig.data[0].y, fig.data[0].x,
                                                                 fig.data[0].text, strict=False):
        assert label.startswith(f"{op} of ~2^{bucket} B") and label.endswith(f"on pg {pg}")
        assert round(share) == int(pct) and re.search(rf"\b{calls} calls?\b", text)
    table = json.dumps(hotspots.top_table(store, key), cls=PlotlyJSONEncoder)
    assert "allreduce of ~2^25 B (32 MiB) on pg 0" in table
    by_op = hotspots.share(store, key, "op").data[0]
    ops = dict(zip(by_op.y, by_op.x, strict=False))
    top = time_share(busbw_table(gpu_hang.run.collectives, 2), "top")
    assert ops["allreduce"] == pytest.approx(100 * top[top.op == "allreduce"].share.sum())
    assert max(ops, key=ops.get) == "allreduce"  # not allgather: the first collective's set-up is left out


def _gloo_shape() -> pd.DataFrame:
    """A gloo run's records as the hook and Flight Recorder write them: FR rows all 'scheduled' (gloo's
    recorder never marks completion), hook rows 'completed' with durations for the Python-level calls."""
    rows = []
    for rank in range(3):
        for seq in range(1, 9):
            base = {"rank": rank, "pg": "0", "seq": seq, "op": "allreduce", "count": 8, "dtype": "float32",
                    "bytes": 32.0 if seq % 2 else 33280.0, "t_created": 1e9 + seq + rank * 0.01, "t_started": np.nan,
                    "file": "fr", "line": 0, "where": None}
            if seq == 8 and rank == 2:
                continue  # rank 2 never joined #8
            rows.append({**base, "state": "scheduled", "t_completed": np.nan, "duration_ms": np.nan, "source": "fr"})
            if seq % 2 and seq < 8:
                rows.append({**base, "state": "completed", "t_completed": 1e9 + seq + 0.002, "duration_ms": 2.0 + rank,
                             "source": "hook"})
    return pd.DataFrame(rows)[COLLECTIVE_COLUMNS]


def test_gloo_records_completed_by_the_hook_count_as_completed() -> None:
    df = _gloo_shape()
    best = best_records(df)
    assert set(best.source) == {"fr"} and not best.duplicated(["rank", "pg", "seq"]).any()
    done = best[best.state == "completed"]
    assert sorted(set(done.seq)) == [1, 3, 5, 7]  # the hook saw them complete
    assert done.duration_ms.notna().all()
    view = pg_records(df, "0", {0: 7, 1: 7, 2: 7})  # pg_status: completed through #7
    assert set(view[view.seq <= 7].state) == {"completed"} and set(view[view.seq == 8].state) == {"scheduled"}
    tab = busbw_table(df, 3)  # durations exist: Hotspots is not empty on gloo
    assert len(tab) == 3 and set(tab.seq) == {3, 5, 7}


def test_states_and_culprit_flags_come_from_the_decision(gpu_hang) -> None:
    d = gpu_hang.decision
    states = states_at_stuck(gpu_hang.run, gpu_hang.findings, d.stuck)
    hang = next(f for f in gpu_hang.findings if f.stuck == d.stuck)
    assert {r for r, s in states.items() if s == NEVER_JOINED} == set(hang.ranks) == {1}
    assert {r for r, s in states.items() if s == WAITING} == set(hang.data["waiting"]) == {0}
    rows = rank_status(gpu_hang.run, gpu_hang.findings, d.stuck, d.culprit_ranks)
    at = [r for r in rows if r["pg"] == d.stuck.pg]
    assert {r["rank"] for r in at if r["culprit"] == "yes"} == set(d.culprit_ranks)
    assert {r["rank"]: r["at_stuck"] for r in at} == {0: "waiting in #125", 1: "never joined #125"}


def test_progress_matrix_groups_ranks_so_the_one_behind_stands_out() -> None:
    n, behind, stuck = 256, 77, 40
    rank = np.repeat(np.arange(n), stuck)
    seq = np.tile(np.arange(1, stuck + 1), n)
    keep = ~((rank == behind) & (seq >= stuck))
    view = pd.DataFrame({"rank": rank[keep], "seq": seq[keep],
                         "state": np.where(seq[keep] < stuck, "completed", "started")})
    states = {r: (NEVER_JOINED if r == behind else WAITING) for r in range(n)}
    pm = progress_matrix(view, range(n), Stuck("0", stuck, "allreduce"), states, width=16)
    assert pm.labels == ["rank 77", "ranks 0-76, 78-255 (255)"]
    assert pm.cells[0, list(pm.seqs).index(stuck)] == STUCK_NEVER
    assert list(pm.seqs) == list(range(stuck - 15, stuck + 1))


def test_volume_from_nccl_lines_alone(tmp_path: Path, store) -> None:
    """NCCL logs only (no hook, no Flight Recorder): no durations, yet the COLL lines say where the volume goes."""
    from ncclscope.dashboard.pages import hotspots

    generate_run(tmp_path / "run", nranks=8, steps=4)
    a = analyze_paths([tmp_path / "run"], cache=False)
    assert set(a.run.collectives.source.astype(str)) == {"nccl"}
    calls = one_row_per_collective(a.run.collectives)
    assert len(calls) == a.run.collectives.groupby(["pg", "seq"], observed=True).ngroups
    vol = volume(calls, "op")
    assert vol.share.sum() == pytest.approx(1.0) and vol.calls.sum() == len(calls)
    key = store.analyze([tmp_path / "run"], "nccl-only")
    fig = hotspots.volume_fig(store, key, "op")
    assert list(fig.data[0].y) == list(vol.group)
    share = hotspots.share(store, key, "op")
    assert "no collective durations recorded" in share.layout.annotations[0].text
    assert "ncclscope run" in share.layout.annotations[0].text  # says which input would fill it
