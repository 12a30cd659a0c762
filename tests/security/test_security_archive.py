"""Archives are unpacked without trusting them: every refusal is one line, exit 2, nothing outside.

Each bad archive goes through ``ncclscope analyze`` (in-process ``main``; one case as a real
subprocess). The temp folder is redirected into the test's own folder, so the test can check
that nothing was written anywhere else and that the temp folder is gone afterwards.
"""
from __future__ import annotations

import io
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

import pytest
from conftest import ROOT

from ncclscope import archive
from ncclscope.cli import main

LOG = b"vm:1:1 [0] NCCL INFO NCCL version 2.28.9+cuda13.0\n"


@pytest.fixture
def box(tmp_path: Path, monkeypatch) -> Path:
    """tmp_path/tmp is the only temp folder the analysis may use; tmp_path/work holds the archive."""
    (tmp_path / "tmp").mkdir()
    (tmp_path / "work").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    monkeypatch.chdir(tmp_path / "work")
    return tmp_path


def _zip(path: Path, members: list[tuple[str, bytes, int | None]]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data, mode in members:
            info = zipfile.ZipInfo(name)
            info.create_system = 3
            if mode is not None:
                info.external_attr = mode << 16
            zf.writestr(info, data)
    return path


def _tar(path: Path, members: list[tarfile.TarInfo | tuple[str, bytes]]) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        for m in members:
            if isinstance(m, tarfile.TarInfo):
                tf.addfile(m)
            else:
                info = tarfile.TarInfo(m[0])
                info.size = len(m[1])
                tf.addfile(info, io.BytesIO(m[1]))
    return path


def _ti(name: str, kind: bytes, linkname: str = "") -> tarfile.TarInfo:
    t = tarfile.TarInfo(name)
    t.type = kind
    t.linkname = linkname
    return t


def _analyze(box: Path, archive_path: Path, capsys) -> tuple[int, str]:
    rc = main(["analyze", str(archive_path)])
    err = capsys.readouterr().err
    return rc, err


def _assert_refused(box: Path, rc: int, err: str, words: str) -> None:
    assert rc == 2, err
    assert err.count("\n") == 1 and err.startswith("ncclscope: "), err
    assert "Traceback" not in err
    assert words in err, err
    written = [p for p in box.rglob("*") if p.name.startswith("evil") or p.name == "passwd"]
    assert not written, f"written outside: {written}"
    assert not list((box / "tmp").iterdir()), "temp folder left behind"


BAD_ZIPS = {
    "climbs out": ([("run/../../evil.log", LOG, None)], "climbs out of its folder"),
    "backslash climb": ([("run\\..\\..\\evil.log", LOG, None)], "climbs out of its folder"),
    "absolute path": ([("/tmp/evil.log", LOG, None)], "absolute path"),
    "drive letter": ([("C:/evil.log", LOG, None)], "absolute path"),
    "symlink": ([("ok.log", LOG, None), ("evil_link", b"/etc/passwd", 0o120777)], "link or device"),
    "char device": ([("evil_dev", b"", 0o020644)], "link or device"),
    "fifo": ([("evil_fifo", b"", 0o010644)], "link or device"),
}


@pytest.mark.parametrize("name", sorted(BAD_ZIPS))
def test_bad_zip_refused(name, box, capsys):
    members, words = BAD_ZIPS[name]
    rc, err = _analyze(box, _zip(box / "work" / "run.zip", members), capsys)
    _assert_refused(box, rc, err, words)


BAD_TARS = {
    "climbs out": ([("run/../../evil.log", LOG)], "climbs out of its folder"),
    "absolute path": ([("/tmp/evil.log", LOG)], "absolute path"),
    "symlink": ([("ok.log", LOG), _ti("evil_link", tarfile.SYMTYPE, "/etc/passwd")], "link or device"),
    "hard link": ([("ok.log", LOG), _ti("evil_hard", tarfile.LNKTYPE, "/etc/passwd")], "link or device"),
    "char device": ([_ti("evil_dev", tarfile.CHRTYPE)], "link or device"),
    "block device": ([_ti("evil_blk", tarfile.BLKTYPE)], "link or device"),
    "fifo": ([_ti("evil_fifo", tarfile.FIFOTYPE)], "link or device"),
}


@pytest.mark.parametrize("name", sorted(BAD_TARS))
def test_bad_tar_gz_refused(name, box, capsys):
    members, words = BAD_TARS[name]
    rc, err = _analyze(box, _tar(box / "work" / "run.tar.gz", members), capsys)
    _assert_refused(box, rc, err, words)


def test_zip_bomb_refused(box, capsys):
    bomb = box / "work" / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        zf.writestr("a.log", b"\0" * (64 * 1024 * 1024))  # 64 MB of zeros pack to ~64 kB
    assert bomb.stat().st_size < 200_000
    rc, err = _analyze(box, bomb, capsys)
    _assert_refused(box, rc, err, "compression ratio")


def test_member_that_inflates_past_its_declared_size_refused(tmp_path):
    src = tmp_path / "liar.zip"
    with zipfile.ZipFile(src, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("a.log", b"x" * 100_000)
    raw = bytearray(src.read_bytes())
    size = (100_000).to_bytes(4, "little")
    assert raw.count(size) == 2  # local header and central directory both declare the size
    src.write_bytes(bytes(raw).replace(size, (10).to_bytes(4, "little")))
    with pytest.raises(archive.ArchiveError, match="inflates past its size|not a readable archive"):
        archive.extract(src, tmp_path / "out")


def test_too_many_members_refused(box, capsys):
    many = box / "work" / "many.zip"
    with zipfile.ZipFile(many, "w", zipfile.ZIP_STORED) as zf:
        for i in range(archive.MAX_MEMBERS + 1):
            zf.writestr(f"f{i}", b"")
    rc, err = _analyze(box, many, capsys)
    _assert_refused(box, rc, err, f"limit {archive.MAX_MEMBERS}")


def test_tar_members_counted_as_they_stream(tmp_path):
    tgz = _tar(tmp_path / "many.tar.gz", [(f"f{i}.log", LOG) for i in range(12)])
    with pytest.raises(archive.ArchiveError, match="more than 10 members"):
        archive.extract(tgz, tmp_path / "out", max_members=10)


def test_total_size_over_limit_refused(box, capsys):
    # a tar header that claims 5 GB: refused from the header, before any byte is unpacked
    big = box / "work" / "big.tar.gz"
    info = tarfile.TarInfo("huge.log")
    info.size = 5 * 1024**3
    with tarfile.open(big, "w:gz") as tf:
        tf.fileobj.write(info.tobuf())  # header only; the data never follows
    rc, err = _analyze(box, big, capsys)
    _assert_refused(box, rc, err, "unpacks to more than")


def test_limits_are_parameters(tmp_path):
    z = _zip(tmp_path / "a.zip", [("a.log", LOG * 100, None), ("b.log", LOG * 100, None)])
    with pytest.raises(archive.ArchiveError, match="unpacks to more than 6000 bytes"):
        archive.extract(z, tmp_path / "o1", max_total=6000)
    with pytest.raises(archive.ArchiveError, match="1 members|limit 1"):
        archive.extract(z, tmp_path / "o2", max_members=1)


@pytest.mark.parametrize("kind", ["truncated zip", "junk named .zip", "junk named .tar.gz", "clashing names"])
def test_unreadable_archives_are_one_line(kind, box, capsys):
    p = box / "work" / ("x.tar.gz" if "tar" in kind else "x.zip")
    if kind == "truncated zip":
        good = _zip(box / "work" / "good.zip", [(f"f{i}.log", LOG * 50, None) for i in range(20)]).read_bytes()
        p.write_bytes(good[:len(good) // 2] + good[-200:])
    elif kind == "clashing names":
        _zip(p, [("a", LOG, None), ("a/b.log", LOG, None)])
    else:
        p.write_bytes(b"PK\x03\x04" + bytes(range(256)) * 4)
    rc, err = _analyze(box, p, capsys)
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert not list((box / "tmp").iterdir())


def test_good_archive_of_a_real_run_still_analyzed(corpus, box, capsys):
    z = box / "work" / "run.zip"
    with zipfile.ZipFile(z, "w", zipfile.ZIP_DEFLATED) as zf:
        for f in sorted((corpus / "crash_rank1_exit").iterdir()):
            zf.write(f, f"crash_rank1_exit/{f.name}")
    t = _tar(box / "work" / "run.tar.gz", [(f"r/{f.name}", f.read_bytes())
                                           for f in sorted((corpus / "crash_rank1_exit").iterdir())])
    for a in (z, t):
        assert main(["analyze", str(a), "--json"]) == 0
        out = capsys.readouterr().out
        assert '"verdict": "crash"' in out
    assert not list((box / "tmp").iterdir())


def test_cli_subprocess_bomb_one_line(tmp_path):
    bad = _zip(tmp_path / "bomb.zip", [("../../evil.log", LOG, None)])
    env_tmp = tmp_path / "tmp"
    env_tmp.mkdir()
    p = subprocess.run([sys.executable, "-m", "ncclscope", "analyze", str(bad)], cwd=ROOT, capture_output=True,
                       text=True, timeout=600, env={"PATH": "/usr/bin:/bin", "TMPDIR": str(env_tmp)},
                       check=False)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "Traceback" not in p.stderr, p.stderr
    assert p.stderr == "ncclscope: bomb.zip: refused archive member that climbs out of its folder: '../../evil.log'\n"
    assert not list(env_tmp.iterdir()) and not list(tmp_path.parent.glob("evil*"))
    shutil.rmtree(env_tmp)
