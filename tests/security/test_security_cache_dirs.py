"""The caches under ``$XDG_CACHE_HOME`` (the run cache, the compiled COLL reader's module) are used only
in folders no other user can swap: each folder above them ours or root's and writable by no one else
(sticky folders aside); the reader's build lock is opened without following a link and never truncated."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from ncclscope import cache, safe_io
from ncclscope.analysis import analyze_paths
from ncclscope.sources.coll import kernel_build

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"


def _run(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    shutil.copytree(SAMPLES / "gpu_hang", run, ignore=shutil.ignore_patterns(".ncclscope-cache"))
    return run


def test_cache_home_others_can_write_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Anyone can rename ``ncclscope`` out of a folder they can write, and put their own in its place."""
    xdg = tmp_path / "xdg"
    xdg.mkdir()
    os.chmod(xdg, 0o777)
    monkeypatch.setenv("XDG_CACHE_HOME", str(xdg))
    run = _run(tmp_path)
    assert analyze_paths([run]).decision.verdict.value == "hang"
    assert not (xdg / "ncclscope" / "runs").exists() and cache.open_entry([run]) is None
    with pytest.raises(safe_io.UnsafeFolder, match="others can write to"):
        cache.cache_root()
    os.chmod(xdg, 0o1777)  # sticky, like /tmp: others cannot rename what is ours
    analyze_paths([run])
    assert cache.open_entry([run]) is not None


@pytest.mark.skipif(os.geteuid() != 0, reason="making a folder of another user needs root")
def test_cache_home_of_another_user_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    xdg = tmp_path / "theirs"
    (xdg / "ncclscope").mkdir(parents=True, mode=0o700)
    os.chown(xdg, 65534, 65534)
    monkeypatch.setenv("XDG_CACHE_HOME", str(xdg))
    with pytest.raises(safe_io.UnsafeFolder, match="belongs to another user"):
        cache.cache_root()
    run = _run(tmp_path)
    assert analyze_paths([run]).decision.verdict.value == "hang" and cache.open_entry([run]) is None


@pytest.fixture
def kernel_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A kernel folder as a finished build leaves it (a module file there), so ``build`` only locks and looks."""
    monkeypatch.setenv("NCCLSCOPE_KERNEL_DIR", str(tmp_path / "kernels"))
    folder = kernel_build.kernel_dir()
    if folder is None:
        pytest.skip("numba is not installed")
    folder.mkdir(parents=True, mode=0o700)
    kernel_build.module_path(folder).write_bytes(b"built")
    return folder


def test_build_lock_is_never_truncated_nor_followed(kernel_folder: Path, tmp_path: Path) -> None:
    lock = kernel_folder / ".lock"
    lock.write_text("held by another build\n")
    assert kernel_build.build() == kernel_folder
    assert lock.read_text() == "held by another build\n"  # opened for the lock only, not truncated
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    lock.unlink()
    os.symlink(victim, lock)
    assert kernel_build.build() is None  # a link at the lock's name: no build, nothing followed
    assert victim.read_text() == "precious\n"


def test_kernel_folder_under_a_folder_others_can_write_is_neither_built_nor_loaded(kernel_folder: Path) -> None:
    base = kernel_folder.parent
    os.chmod(base, 0o777)  # another user could move the checked folder away and put theirs there
    assert kernel_build.build() is None and kernel_build.load(kernel_folder) is None
    assert (kernel_folder / ".lock").exists() is False


@pytest.mark.skipif(os.geteuid() != 0, reason="making a folder of another user needs root")
def test_kernel_folder_under_another_users_folder_is_not_used(kernel_folder: Path) -> None:
    base = kernel_folder.parent
    os.chown(base, 65534, 65534)
    assert kernel_build.build() is None and kernel_build.load(kernel_folder) is None
