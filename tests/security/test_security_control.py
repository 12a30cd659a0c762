"""The live monitor's dump request on a hang: never written through a link another user planted in a
run folder they can write (at the request's name, at a temporary name, or as the control folder
itself), never into a control folder of someone else's; refused with one warning, and the hang alert
still goes out (without stacks)."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from ncclscope import safe_io
from ncclscope.live.monitor import CONTROL_DIR, LiveConfig, LiveMonitor

T0 = 1_800_000_000.0


def _w(p: Path, *recs: dict[str, Any]) -> None:
    with open(p, "a", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in recs)


def _hang(d: Path) -> float:
    """Three ranks; rank 2 never joins collective #40."""
    t = T0
    for s in range(1, 41):
        t = T0 + s * 0.05
        for r in range(3):
            if r == 2 and s == 40:
                continue
            recs = [{"type": "coll", "rank": r, "pg": "0", "seq": s, "op": "allreduce", "numel": 4,
                     "dtype": "float32", "t": t}]
            if s < 40:
                recs.append({"type": "done", "rank": r, "pg": "0", "seq": s, "t": t + 0.01})
            _w(d / f"ncclscope-rank{r}.jsonl", *recs)
    return t


def _alert(d: Path) -> tuple[dict[str, Any], LiveMonitor]:
    mon = LiveMonitor(d, LiveConfig(console=False))
    t = _hang(d)
    assert mon.poll_once(now=t + 1) == []
    (a,) = mon.poll_once(now=t + 8)
    assert a["kind"] == "hang" and a["culprit_ranks"] == [2]
    mon.stop()
    return a, mon


def shared(tmp_path: Path) -> Path:
    d = tmp_path / "run"
    d.mkdir()
    os.chmod(d, 0o1777)  # a project scratch folder: anyone can create names in it
    return d


def test_control_folder_that_is_a_link_is_refused_once(tmp_path: Path) -> None:
    d = shared(tmp_path)
    elsewhere = tmp_path / "chosen-by-another-user"
    elsewhere.mkdir()
    os.symlink(elsewhere, d / CONTROL_DIR)
    a, mon = _alert(d)
    assert a["stacks_requested"] is False
    assert list(elsewhere.iterdir()) == []  # nothing written where the link points
    (why,) = [e for e in mon.errors() if CONTROL_DIR in e]
    assert "symbolic link" in why and "not asking the ranks for their stacks" in why and "\n" not in why


def test_links_planted_at_the_request_and_temporary_names_are_not_followed(tmp_path: Path) -> None:
    d = shared(tmp_path)
    ctl = d / CONTROL_DIR
    ctl.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    os.symlink(victim, ctl / "dump-request")
    os.symlink(victim, ctl / f".dump-request.{os.getpid()}.tmp")  # the name it used to write under
    a, _ = _alert(d)
    assert a["stacks_requested"] is True and victim.read_text() == "precious\n"
    req = ctl / "dump-request"
    assert not req.is_symlink() and json.loads(req.read_text())["id"] == 1  # the link itself was replaced
    assert sorted(p.name for p in ctl.iterdir()) == sorted(["dump-request", f".dump-request.{os.getpid()}.tmp"])


def test_request_is_written_through_the_folder_descriptor_under_an_unguessable_name(tmp_path: Path,
                                                                                  monkeypatch) -> None:
    """The temporary's name is new each time and never the pid; the rename is made within the folder's
    descriptor, so a control folder swapped for a link after it was opened changes nothing."""
    names: list[str] = []
    real_write_at = safe_io.write_at

    def spy(dir_fd: int, name: str, data: Any, *a: Any, **kw: Any) -> None:
        real_open = os.open

        def recording_open(path: Any, flags: int, *rest: Any, **kws: Any) -> int:
            names.append(str(path))
            assert kws.get("dir_fd") == dir_fd and flags & os.O_EXCL and flags & os.O_NOFOLLOW
            return real_open(path, flags, *rest, **kws)

        monkeypatch.setattr(os, "open", recording_open)
        try:
            real_write_at(dir_fd, name, data, *a, **kw)
        finally:
            monkeypatch.setattr(os, "open", real_open)

    monkeypatch.setattr(safe_io, "write_at", spy)
    _alert(tmp_path)
    (tmp,) = names
    assert str(os.getpid()) not in tmp and tmp.startswith(".dump-request.") and len(tmp) > 30


@pytest.mark.skipif(os.geteuid() != 0, reason="making a folder of another user needs root")
def test_control_folder_of_another_user_is_refused(tmp_path: Path) -> None:
    d = shared(tmp_path)
    ctl = d / CONTROL_DIR
    ctl.mkdir(mode=0o755)
    os.chown(ctl, 65534, 65534)
    a, mon = _alert(d)
    assert a["stacks_requested"] is False and list(ctl.iterdir()) == []
    assert any("belongs to another user" in e for e in mon.errors())


@pytest.mark.skipif(os.geteuid() != 0, reason="making a folder of another user needs root")
def test_control_folder_of_the_run_owner_is_used(tmp_path: Path) -> None:
    """Root watching a user's job: the run folder and its control folder are that user's."""
    d = tmp_path / "run"
    d.mkdir(mode=0o755)
    ctl = d / CONTROL_DIR
    ctl.mkdir(mode=0o755)
    os.chown(d, 65534, 65534)
    os.chown(ctl, 65534, 65534)
    a, _ = _alert(d)
    assert a["stacks_requested"] is True and json.loads((ctl / "dump-request").read_text())["id"] == 1


def test_hook_reads_no_request_through_a_linked_control_folder(tmp_path: Path) -> None:
    """The rank's side: a request in a folder the control folder's link points to is not a request."""
    from types import SimpleNamespace

    from ncclscope.hook.poller import Poller

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "dump-request").write_text('{"id": 1}')
    d = tmp_path / "run"
    d.mkdir()
    os.symlink(elsewhere, d / CONTROL_DIR)
    assert Poller._control_key(SimpleNamespace(control=d / CONTROL_DIR / "dump-request")) is None  # type: ignore[arg-type]
    os.unlink(d / CONTROL_DIR)
    (d / CONTROL_DIR).mkdir()
    (d / CONTROL_DIR / "dump-request").write_text('{"id": 1}')
    assert Poller._control_key(SimpleNamespace(control=d / CONTROL_DIR / "dump-request")) is not None  # type: ignore[arg-type]


def test_hook_writes_no_record_and_no_dump_through_a_planted_link(tmp_path: Path, monkeypatch) -> None:
    """The rank's own files in a run folder others can write: its records file and the Flight Recorder
    dump's temporary (it was ``.fr_live_rankR.pkl.tmp``, a name anyone could plant a link at)."""
    import types

    import torch._C._distributed_c10d as C
    from ncclscope.hook.chaos import Chaos
    from ncclscope.hook.poller import Poller
    from ncclscope.hook.writer import Writer

    d = shared(tmp_path)
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    os.symlink(victim, d / "ncclscope-rank0.jsonl")
    w = Writer(0, d / "ncclscope-rank0.jsonl", 100, 1e9, Chaos(), {})
    w.start()
    w.put({"type": "start", "rank": 0})
    w.stop(5)
    assert victim.read_text() == "precious\n" and w.dropped == 1

    os.symlink(victim, d / ".fr_live_rank0.pkl.tmp")
    monkeypatch.setattr(C, "_dump_fr_trace", lambda *a: b"\x80" * 100, raising=False)
    path = Poller.dump_fr(types.SimpleNamespace(run_dir=d, rank=0, backend="gloo"))  # type: ignore[arg-type]
    assert path == d / "fr_live_rank0.pkl" and path.read_bytes() == b"\x80" * 100
    assert victim.read_text() == "precious\n"
    assert sorted(p.name for p in d.iterdir()) == [".fr_live_rank0.pkl.tmp", "fr_live_rank0.pkl", "ncclscope-rank0.jsonl"]
