"""``ncclscope analyze -``: a paste or a pipe on standard input is analysed as the same bytes in a file are,
bounded, and leaves nothing behind."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from conftest import SAMPLES

from ncclscope.input_names import InputError
from ncclscope.stdin_input import STDIN_NAME, archive_name, spool_stdin

STDERR_LOG = SAMPLES / "gpu_hang" / "stderr.log"


def _analyze(args: list[str], stdin: bytes, tmp: Path) -> subprocess.CompletedProcess[bytes]:
    """The installed command as a user runs it, with its own temporary folder and cache (both checked after)."""
    env = {**os.environ, "TMPDIR": str(tmp / "tmp"), "XDG_CACHE_HOME": str(tmp / "cache"), "NO_COLOR": "1"}
    env.pop("COLUMNS", None)
    (tmp / "tmp").mkdir(exist_ok=True)
    return subprocess.run([sys.executable, "-m", "ncclscope", "analyze", *args], input=stdin, env=env,
                          capture_output=True, timeout=600)


def test_a_pipe_gives_the_analysis_of_the_same_bytes_in_a_file(tmp_path: Path) -> None:
    data = STDERR_LOG.read_bytes()
    piped = _analyze(["-", "--json"], data, tmp_path)
    assert piped.returncode == 0, piped.stderr.decode()[-2000:]
    copy = tmp_path / "given" / STDIN_NAME  # the same bytes under the name the pipe gets
    copy.parent.mkdir()
    copy.write_bytes(data)
    filed = _analyze(["--no-cache", "--json", str(copy)], b"", tmp_path)
    assert filed.returncode == 0, filed.stderr.decode()[-2000:]
    assert json.loads(piped.stdout) == json.loads(filed.stdout)
    report = json.loads(piped.stdout)
    assert report["verdict"] == "hang" and report["culprit_ranks"] == [1]
    assert {e["file"] for f in report["findings"] for e in f["evidence"]} == {STDIN_NAME}
    assert list((tmp_path / "tmp").iterdir()) == []  # the spool folder is removed
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").rglob("*.json"))  # and never cached


def test_text_report_of_a_pipe_names_stdin_as_the_evidence_file(tmp_path: Path) -> None:
    res = _analyze(["-"], STDERR_LOG.read_bytes(), tmp_path)
    out = res.stdout.decode()
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    assert out.startswith("VERDICT: HANG") and f"{STDIN_NAME}:8 " in out


def test_nothing_on_stdin_is_the_one_line_of_an_unreadable_input(tmp_path: Path) -> None:
    res = _analyze(["-"], b"", tmp_path)
    assert res.returncode == 2 and res.stdout == b""
    assert res.stderr.decode().count("\n") == 1 and "nothing readable" in res.stderr.decode()
    assert list((tmp_path / "tmp").iterdir()) == []


def test_stdin_and_a_file_together(tmp_path: Path) -> None:
    """``-`` is one input among others: the NCCL log named on the command line joins the pasted stderr."""
    res = _analyze(["-", "--json", str(SAMPLES / "gpu_hang" / "vm.820.nccl.log")], STDERR_LOG.read_bytes(), tmp_path)
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    files = {i["file"] for i in json.loads(res.stdout)["inputs"]}
    assert files == {STDIN_NAME, "vm.820.nccl.log"}


def test_a_tar_gz_piped_in_is_unpacked_as_an_archive(tmp_path: Path) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name in ("stderr.log", "vm.820.nccl.log", "vm.821.nccl.log"):
            tar.add(SAMPLES / "gpu_hang" / name, arcname=f"run/{name}")
    assert archive_name(buf.getvalue()[:512]) == f"{STDIN_NAME}.tar.gz"
    res = _analyze(["-", "--json"], buf.getvalue(), tmp_path)
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    report = json.loads(res.stdout)
    assert report["verdict"] == "hang" and report["job"]["nccl_version"] == "2.28.9"


def test_archive_names_by_content() -> None:
    assert archive_name(b"PK\x03\x04rest") == f"{STDIN_NAME}.zip"
    plain = io.BytesIO()
    with tarfile.open(fileobj=plain, mode="w") as tar:
        info = tarfile.TarInfo("a.log")
        info.size = 3
        tar.addfile(info, io.BytesIO(b"abc"))
    assert archive_name(plain.getvalue()[:512]) == f"{STDIN_NAME}.tar"
    import gzip

    assert archive_name(gzip.compress(b"vm:1:1 [0] NCCL INFO x\n" * 50)[:512]) is None  # a gzip of text: not a tar
    assert archive_name(b"vm:1:1 [0] NCCL INFO Bootstrap : Using eth0\n") is None


def test_stdin_is_bounded_and_nothing_is_kept_when_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # TMPDIR read again
    spool = spool_stdin(io.BytesIO(b"x" * 100), limit=100)  # exactly the limit: kept whole
    assert spool.path.read_bytes() == b"x" * 100
    assert oct(spool.folder.stat().st_mode & 0o777) == "0o700" and oct(spool.path.stat().st_mode & 0o777) == "0o600"
    spool.remove()
    assert not spool.folder.exists()

    class Endless(io.RawIOBase):
        read_bytes = 0

        def readable(self) -> bool:
            return True

        def readinto(self, b) -> int:  # type: ignore[no-untyped-def]
            b[:] = b"y" * len(b)
            self.read_bytes += len(b)
            return len(b)

    endless = Endless()
    with pytest.raises(InputError, match="more than 1000 bytes"):
        spool_stdin(io.BufferedReader(endless), limit=1000)
    assert endless.read_bytes < 1000 + 2 * io.DEFAULT_BUFFER_SIZE  # stopped at the limit, not at the end
    assert list(tmp_path.iterdir()) == []
