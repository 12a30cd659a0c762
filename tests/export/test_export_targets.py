"""`ncclscope export` writes regular files only: a device, a FIFO, a folder or a link at the target is
refused with one line and exit 2 (never replaced: `--prometheus /dev/null` as root once turned the
device into a file), and so are a missing folder and a permission error; the write is atomic and its
temporary name cannot be planted."""
from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest
from ncclscope import safe_io
from ncclscope.cli import main
from ncclscope.export import write_atomic

ROOT = Path(__file__).resolve().parents[2]
GPU_HANG = ROOT / "samples" / "gpu_hang"


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))


def _export(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str]]:
    code = main(["export", str(GPU_HANG), *args])
    return code, capsys.readouterr().err.strip().splitlines()


def _refused(code: int, err: list[str], why: str) -> None:
    assert code == 2, err
    assert len(err) == 1 and err[0].startswith("ncclscope: cannot write ") and why in err[0], err
    assert "internal error" not in err[0]


@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root")
@pytest.mark.parametrize("option", ["--prometheus", "--perfetto"])
def test_a_device_is_refused_not_replaced(tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str) -> None:
    dev = tmp_path / "null"
    os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # /dev/null's numbers, in a folder of the test's
    _refused(*_export(capsys, option, str(dev)), "a character device, not a regular file")
    assert stat.S_ISCHR(os.lstat(dev).st_mode)


def test_a_fifo_is_refused_not_replaced(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "metrics.prom"
    os.mkfifo(fifo)
    _refused(*_export(capsys, "--prometheus", str(fifo)), "a FIFO, not a regular file")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_fifo_swapped_in_after_the_check_is_refused_by_the_write(tmp_path: Path) -> None:
    fifo = tmp_path / "metrics.prom"
    os.mkfifo(fifo)
    with pytest.raises(safe_io.NotRegularFile, match="FIFO"):
        write_atomic(fifo, "x 1\n")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and [p.name for p in tmp_path.iterdir()] == ["metrics.prom"]


def test_a_link_is_refused_and_what_it_points_to_kept(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    link = tmp_path / "out.prom"
    os.symlink(victim, link)
    _refused(*_export(capsys, "--prometheus", str(link)), "a symbolic link, not a regular file")
    assert link.is_symlink() and victim.read_text() == "precious\n"
    folder_link = tmp_path / "out.json"
    os.symlink(tmp_path, folder_link)  # a link to a folder: the same line, not click's usage error
    _refused(*_export(capsys, "--perfetto", str(folder_link)), "a symbolic link")


def test_a_folder_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _refused(*_export(capsys, "--perfetto", str(tmp_path)), "a folder, not a regular file")


def test_a_missing_folder_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "no-such-folder" / "out.prom"
    _refused(*_export(capsys, "--prometheus", str(target)), "does not exist")
    assert not target.parent.exists()


def test_a_permission_error_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    def denied(*_a: object, **_k: object) -> None:
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(safe_io, "write_replace", denied)  # what a read-only folder does to a user not root
    _refused(*_export(capsys, "--prometheus", str(tmp_path / "out.prom")), "Permission denied")


def test_a_planted_temporary_name_changes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The temporary used to be ``.NAME.PID.tmp``: a link planted there made the export fail (exit 3)
    or, without O_EXCL, write where the link pointed. Now its name is random and the target is written."""
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    target = tmp_path / "out.prom"
    os.symlink(victim, tmp_path / f".out.prom.{os.getpid()}.tmp")
    code, err = _export(capsys, "--prometheus", str(target))
    assert code == 0, err
    assert target.read_text().startswith("# HELP ") and not target.is_symlink()
    assert victim.read_text() == "precious\n"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")) == [f".out.prom.{os.getpid()}.tmp"]


def test_an_existing_regular_file_is_replaced_atomically(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "out.prom"
    target.write_text("old\n")
    inode = os.stat(target).st_ino
    code, err = _export(capsys, "--prometheus", str(target))
    assert code == 0 and err == [f"ncclscope: wrote {target} (Prometheus text format)"]
    assert target.read_text().startswith("# HELP ") and os.stat(target).st_ino != inode  # renamed over it
