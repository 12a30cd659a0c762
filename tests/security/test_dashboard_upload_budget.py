"""Uploads must not pile up: the same files uploaded again are the analysis already made (hash), an upload's
files are deleted once analysed (the analysis and its log view stay), and all uploads together are held to
one disk budget and one memory budget, past which an upload is refused with a message on the page."""
from __future__ import annotations

import base64
import io
import json
import threading
import zipfile
from pathlib import Path

import pytest
from ncclscope.dashboard import data as dash_data
from ncclscope.dashboard import ids, uploads
from ncclscope.dashboard.app import create_app
from ncclscope.dashboard.data import RunStore, UploadError
from ncclscope.dashboard.upload_gate import upload_output

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "samples" / "gpu_hang"
BOUND_S = 120  # a bound for a failing test only


def _zip(prefix: str = "gpu_hang") -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for p in sorted(SAMPLE.rglob("*")):
            if p.is_file() and ".ncclscope-cache" not in p.parts:
                z.write(p, f"{prefix}/{p.relative_to(SAMPLE)}")
    return buf.getvalue()


def _data_url(blob: bytes) -> str:
    return "data:application/zip;base64," + base64.b64encode(blob).decode()


def _files_under(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()]


@pytest.fixture
def store(tmp_path: Path):
    rs = RunStore(tmp_path / "store")
    yield rs
    rs.close()


def test_the_same_upload_eleven_times_is_analysed_once_and_its_files_deleted(store: RunStore) -> None:
    create_app(run_store=store)  # the pages register with an app: imported after it exists
    blob = _zip()
    keys = set()
    for _ in range(11):
        key = store.submit_upload(["run.zip"], [_data_url(blob)])
        keys.add(key)
        store.wait(key)
    assert len(keys) == 1
    key = keys.pop()
    assert store.status(key)["state"] == "done"
    entry = store.get(key)
    assert entry is not None and entry.analysis.decision.verdict.value == "hang"  # the analysis is kept
    assert _files_under(store.workdir) == [] and store.disk.used == 0  # its files are not
    from ncclscope.dashboard.pages import logs  # the log view still shows the lines, from its index

    rows, _, _, info, _ = logs.page(store, key, None, None, None, None, None, 0, None, True)
    assert rows and " of " in info
    other = store.submit_upload(["run.zip"], [_data_url(_zip("another"))])  # other files: a new analysis
    assert other != key


def test_uploads_together_are_held_to_one_disk_budget(store: RunStore, monkeypatch: pytest.MonkeyPatch) -> None:
    entered, release = threading.Event(), threading.Event()
    real = dash_data.analyze_paths

    def held(*a, **k):  # type: ignore[no-untyped-def]
        entered.set()
        assert release.wait(BOUND_S)
        return real(*a, **k)

    monkeypatch.setattr(dash_data, "analyze_paths", held)
    blob = _zip()
    first = store.submit_upload(["a.zip"], [_data_url(blob)])
    try:
        assert entered.wait(BOUND_S)  # the first upload is on disk, unpacked, being analysed
        assert store.disk.used >= len(blob)
        store.disk.limit = store.disk.used + len(blob) // 2
        with pytest.raises(UploadError, match=r"upload refused: .*disk space.* all uploads may use together"):
            store.submit_upload(["b.zip"], [_data_url(_zip("b"))])
    finally:
        release.set()
    store.wait(first)
    assert store.status(first)["state"] == "done" and store.disk.used == 0
    second = store.submit_upload(["b.zip"], [_data_url(_zip("b"))])  # room again, once the first is analysed
    store.wait(second)
    assert store.status(second)["state"] == "done", store.status(second)


def _upload_request(app, blob: bytes, name: str) -> dict:  # type: ignore[no-untyped-def]
    """The body dash-renderer POSTs when files are dropped on the upload area."""
    output = upload_output(app)
    assert output is not None
    outs = []
    for part in output.strip(".").split("..."):
        cid, prop = part.split(".", 1)
        outs.append({"id": cid, "property": prop})
    return {"output": output, "outputs": outs,
            "inputs": [{"id": ids.UPLOAD, "property": "contents", "value": [_data_url(blob)]}],
            "changedPropIds": [f"{ids.UPLOAD}.contents"],
            "state": [{"id": ids.UPLOAD, "property": "filename", "value": [name]}]}


def test_concurrent_uploads_past_the_memory_budget_are_refused_with_a_message(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blob = _zip()
    monkeypatch.setattr(uploads, "GATE_MIN_BYTES", 1024)
    rs = RunStore(tmp_path / "store")
    app = create_app(run_store=rs)
    auth = {"Authorization": f"Bearer {app.server.config['ncclscope_token']}", "Host": "127.0.0.1:8050",
            "Origin": "http://127.0.0.1:8050"}
    assert app.server.test_client().get("/_dash-layout", headers=auth).status_code == 200  # the callbacks are set up
    body = json.dumps(_upload_request(app, blob, "run.zip"))
    rs.memory.limit = len(body) * uploads.DECODE_FACTOR * 3 // 2  # one such upload at a time
    entered, release = threading.Event(), threading.Event()
    real = RunStore.submit_upload

    def held(self, *a, **k):  # type: ignore[no-untyped-def]
        entered.set()
        assert release.wait(BOUND_S)
        return real(self, *a, **k)

    monkeypatch.setattr(RunStore, "submit_upload", held)
    first: list = []

    def post(out: list) -> None:
        out.append(app.server.test_client().post("/_dash-update-component", data=body, headers=auth,
                                                 content_type="application/json"))

    t = threading.Thread(target=post, args=(first,))
    t.start()
    try:
        assert entered.wait(BOUND_S)  # the first upload is being decoded, its memory reserved
        second: list = []
        post(second)
        resp = second[0]
        assert resp.status_code == 200
        shown = json.dumps(resp.get_json()["response"][ids.UPLOAD_STATUS]["children"])
        assert "upload refused" in shown and "memory" in shown and "try again" in shown
    finally:
        release.set()
        t.join(BOUND_S)
    assert first[0].status_code == 200 and "analysing" in first[0].get_data(as_text=True)
    assert rs.memory.used == 0  # given back once answered
    third: list = []
    post(third)  # the same files: the analysis already under way or made
    assert third[0].status_code == 200 and "analysing" in third[0].get_data(as_text=True)
    rs.close()
