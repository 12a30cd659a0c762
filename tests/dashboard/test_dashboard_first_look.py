"""What a new user sees first: an upload's status line says how its analysis ended (it stayed on
'analysing...' after the verdict), and the Logs page opens on the verdict's evidence among the NCCL and
PyTorch lines, with the hook's heartbeat records hidden until asked for (it opened on them)."""
from __future__ import annotations

import base64
import io
import json
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from conftest import SAMPLES

from ncclscope.dashboard.app import create_app
from ncclscope.dashboard.data import HEARTBEAT, HOOK, RunStore, classify_lines, filter_logs, log_index

SAMPLE = SAMPLES / "gpu_hang"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[RunStore]:
    rs = RunStore(tmp_path / "store")
    create_app(run_store=rs)  # registers the pages, so their modules can be imported
    yield rs
    rs.close()


def _data_url(blob: bytes) -> str:
    return "data:application/octet-stream;base64," + base64.b64encode(blob).decode()


def _zip(folder: Path) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for p in sorted(folder.iterdir()):
            if p.is_file():
                z.write(p, f"run/{p.name}")
    return buf.getvalue()


def _js(component: object) -> str:
    from plotly.utils import PlotlyJSONEncoder

    return json.dumps(component, cls=PlotlyJSONEncoder)


# -- the upload's status line ---------------------------------------------------------------------------
def test_upload_status_says_the_verdict_once_the_analysis_is_done(store: RunStore) -> None:
    from ncclscope.dashboard.pages import overview

    pending, running, key = overview.handle_upload(store, ["run.zip"], [_data_url(_zip(SAMPLE))])
    assert pending == key and "analysing" in _js(running)
    store.wait(key)
    done = _js(overview.upload_outcome(store, key))
    assert "analysing" not in done and "upload-done" in done
    d = store.get(key).analysis.decision
    assert d.verdict.value == "hang" and d.culprit_ranks == (1,)
    assert "run.zip: analysed in" in done and json.dumps(f" - hang: {d.headline}")[1:-1] in done


def test_upload_status_says_why_an_upload_was_not_analysed(store: RunStore) -> None:
    from ncclscope.dashboard.pages import overview

    _pending, _running, key = overview.handle_upload(store, ["junk.bin"], [_data_url(bytes(range(256)) * 10)])
    store.wait(key)
    failed = _js(overview.upload_outcome(store, key))
    assert "upload-error" in failed and "junk.bin: not analysed - " in failed and "analysing" not in failed


def test_upload_status_is_left_alone_while_the_analysis_runs(store: RunStore) -> None:
    from dash import no_update

    from ncclscope.dashboard.pages import overview

    def unreadable(_job: object) -> list[Path]:
        raise OSError("the upload folder went away")

    assert overview.upload_outcome(store, None) is no_update
    key = store.submit([SAMPLE], "upload", prepare=unreadable)
    store.wait(key)  # a finished job says its outcome, a job still running says nothing new
    assert "upload: not analysed - the upload folder went away" in _js(overview.upload_outcome(store, key))
    store._jobs[key].state = "parsing"  # the same job as the poll would see it mid-way
    assert overview.upload_outcome(store, key) is no_update
    assert "gone" in _js(overview.upload_outcome(store, "no-such-key"))


# -- the log view -----------------------------------------------------------------------------------------
def test_hook_records_and_heartbeats_have_their_own_subsystems() -> None:
    text = pd.Series(['{"type":"hb","t":1.5,"rank":0,"step":null,"pgs":{},"dropped":0}',
                      '{"type": "coll", "t": 1.0, "rank": 0, "pg": "0", "seq": 4}',
                      'vm:820:820 [0] NCCL INFO Channel 00/24 : 0 1',
                      '{"loss": 0.5}', 'step 3 loss 0.1'], dtype="string[pyarrow]")
    sub = list(classify_lines(text, [0] * 5, {})["subsys"])
    assert sub[:3] == [HEARTBEAT, HOOK, "GRAPH"] and sub[3] != HOOK and sub[4] != HOOK


def test_log_index_lists_nccl_and_pytorch_logs_before_the_hook_records(store: RunStore) -> None:
    key = store.analyze([SAMPLE], "gpu_hang")
    store.wait(key)
    df = log_index(store.get(key))
    files = list(df["file"].cat.categories)
    assert files[:4] == ["stderr.log", "stdout.log", "vm.820.nccl.log", "vm.821.nccl.log"]
    assert files[-2:] == ["ncclscope-rank0.jsonl", "ncclscope-rank1.jsonl"]
    beats = df["subsys"] == HEARTBEAT
    assert beats.sum() == 250  # one a second a rank: 125 in each rank's records
    assert not filter_logs(df, hidden=(HEARTBEAT,))["subsys"].eq(HEARTBEAT).any()
    assert len(filter_logs(df, subsys=[HEARTBEAT], hidden=(HEARTBEAT,))) == 250  # asked for by name: shown


def test_logs_page_opens_on_the_verdicts_evidence_without_heartbeats(store: RunStore) -> None:
    from ncclscope.dashboard.pages import logs

    key = store.analyze([SAMPLE], "gpu_hang")
    store.wait(key)
    rows, _pages, _cur, info, styles = logs.page(store, key, None, None, None, None, None, 0, None, True)
    focus = logs.focus(store, key, None)
    first = store.get(key).analysis.findings[0]  # the most severe: the hang
    assert focus is not None and focus["verdict"]
    assert (focus["file"], focus["line"]) in {(e.file, e.line) for e in first.evidence}
    assert focus["file"] in ("stderr.log", "vm.820.nccl.log", "vm.821.nccl.log")  # a log's line, not a hook record
    line = next(r for r in rows if r["file"] == focus["file"] and r["line"] == focus["line"])  # on the page shown
    assert line["subsys"] not in (HOOK, HEARTBEAT)
    assert not any(r["subsys"] == HEARTBEAT for r in rows)
    assert "(250 heartbeat records of the hook hidden)" in info
    assert f"the verdict's evidence: {focus['file']} line {focus['line']} highlighted" in info
    assert any(f"{{line}} = {focus['line']}" in s["if"].get("filter_query", "") for s in styles)
    every = logs.page(store, key, None, None, None, None, None, 0, None, True, [logs.SHOW_HEARTBEATS])
    assert "hidden" not in every[3] and every[3].startswith("1,019 of 1,019 lines")


def test_an_evidence_link_to_a_heartbeat_lists_the_heartbeats(store: RunStore) -> None:
    from ncclscope.dashboard.pages import logs

    key = store.analyze([SAMPLE], "gpu_hang")
    store.wait(key)
    df = log_index(store.get(key))
    beat = df[df["subsys"] == HEARTBEAT].iloc[40]
    target = {"file": str(beat["file"]), "line": int(beat["line"])}
    rows, _pages, _cur, info, _styles = logs.page(store, key, None, None, None, None, None, 0, target, True)
    assert any(r["file"] == target["file"] and r["line"] == target["line"] for r in rows)
    assert "hidden" not in info and logs.focus(store, key, target) == target
