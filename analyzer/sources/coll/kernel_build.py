"""The compiled COLL reader built ahead of time into a small extension module, kept in the user's cache.

``kernel._kernel`` is compiled by numba's ahead-of-time compiler (``numba.pycc``) into an
extension module that imports in about a millisecond and needs no numba at run time; numba's JIT
costs 0.35 s and 140 MB in every process that loads it, more than the reader saves on inputs
under a few hundred megabytes. The module is built once per kernel source, numba, numpy, Python
and machine (a hash of those names its folder), in a child process, so that numba never enters
this one, and under a file lock, so that processes starting together build it once.

Folder: ``$NCCLSCOPE_KERNEL_DIR``, else ``$XDG_CACHE_HOME/ncclscope/kernel`` (``~/.cache``). A
module there is loaded only from a folder and file owned by this user and writable by no one
else, and never by its path after that check: the file is opened (no symlinks, non-blocking),
checked on the open descriptor, and its bytes loaded from a private copy, so that another user
who swaps the folder or file in between gets nothing run; every folder above it must be ours or
root's and writable by no one else (``safe_io.check_ancestors``), and the build lock is opened in the
checked folder without following a link or truncating anything. Run as ``python -m
ncclscope.sources.coll.kernel_build OUTDIR`` it builds into OUTDIR.
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib.machinery
import importlib.metadata
import importlib.util
import os
import platform
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from ... import safe_io

MODULE = "ncclscope_coll_kernel"
# the kernel's arguments, as read_coll_columns_compiled passes them
SIGNATURE = ("void(uint8[::1], uint64[:], int64[::1], int64[::1], boolean[::1], int64[::1], float64[::1], "
             "int32[:,::1], int64[:,::1], int64[:,::1], int64[::1], int32[:,::1])")
BUILD_TIMEOUT_S = 300
_HERE = Path(__file__).resolve().parent
MAX_MODULE_BYTES = 64 * 1024 * 1024  # a built module is well under 1 MB


def kernel_dir() -> Path | None:
    """Where the module for this kernel source and these library versions lives; None without numba."""
    try:
        numba_version = importlib.metadata.version("numba")
        numpy_version = importlib.metadata.version("numpy")
    except importlib.metadata.PackageNotFoundError:
        return None
    h = hashlib.sha256()
    sources = [p.read_bytes() for p in sorted(_HERE.glob("*.py"))]  # the kernel, its grammar, this builder
    for part in (*sources, numba_version.encode(),
                 numpy_version.encode(), sys.version.encode(), importlib.machinery.EXTENSION_SUFFIXES[0].encode(),
                 platform.machine().encode()):
        h.update(len(part).to_bytes(8, "little") + part)
    base = os.environ.get("NCCLSCOPE_KERNEL_DIR") or \
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ncclscope" / "kernel"
    return Path(base) / h.hexdigest()[:24]


def module_path(folder: Path) -> Path:
    return folder / (MODULE + importlib.machinery.EXTENSION_SUFFIXES[0])


def _private_stat(st: os.stat_result) -> bool:
    """Owned by this user and writable by no one else (a module anyone could swap would run their code)."""
    return st.st_uid == os.getuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def read_private_module(folder: Path) -> bytes | None:
    """The module's bytes, read through descriptors checked as they were opened: the folder and the
    file each opened without following a link, each a directory / regular file owned by this user
    and writable by no one else (``fstat`` on the open descriptor, so nothing is resolved twice)."""
    nofollow = getattr(os, "O_NOFOLLOW", 0)
    try:
        dfd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | nofollow)
    except OSError:
        return None
    try:
        st = os.fstat(dfd)
        if not (stat.S_ISDIR(st.st_mode) and _private_stat(st)):
            return None
        try:
            fd = os.open(module_path(folder).name, os.O_RDONLY | nofollow | getattr(os, "O_NONBLOCK", 0), dir_fd=dfd)
        except OSError:
            return None
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not (stat.S_ISREG(st.st_mode) and _private_stat(st)) or st.st_size > MAX_MODULE_BYTES:
                return None
            return f.read(MAX_MODULE_BYTES + 1)
    finally:
        os.close(dfd)


def load(folder: Path | None = None) -> Callable[..., None] | None:
    """The built kernel, or None when it is not there (or not private). The checked bytes are loaded
    from a copy in a fresh private temporary folder (an extension module can only be loaded by path)."""
    folder = folder or kernel_dir()
    if folder is None or safe_io.check_ancestors(folder) is not None:
        return None
    data = read_private_module(folder)
    if data is None or len(data) > MAX_MODULE_BYTES:
        return None
    with tempfile.TemporaryDirectory(prefix="ncclscope-kernel-") as tmp:  # 0700, created by this process
        path = Path(tmp) / module_path(folder).name
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o700)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        spec = importlib.util.spec_from_file_location(MODULE, path)
        if spec is None or spec.loader is None:
            return None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)  # mapped now: the copy can go
    kernel: Callable[..., None] = module.kernel
    return kernel


def _open_lock(folder: Path) -> int | None:
    """The build lock ``.lock`` of ``folder``: opened in the checked folder's descriptor, never through a
    link, never truncated (the file's bytes are nobody's business), a regular file only; None if not."""
    try:
        dfd = safe_io.open_dir(folder, follow=False)
    except OSError:
        return None
    try:
        if not _private_stat(os.fstat(dfd)):
            return None
        fd = os.open(".lock", os.O_WRONLY | os.O_CREAT | safe_io.NOFOLLOW | safe_io.NONBLOCK | safe_io.CLOEXEC,
                     0o600, dir_fd=dfd)
    except OSError:
        return None
    finally:
        os.close(dfd)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return fd


def build(note: Callable[[str], None] | None = None) -> Path | None:
    """Build the module (in a child process, under a lock) unless it is there; its folder, or None."""
    folder = kernel_dir()
    if folder is None:
        return None
    try:  # ours, writable by no one else, and so is every folder above it that is not root's
        safe_io.private_dir(folder)
    except OSError:
        return None
    target = module_path(folder)
    lock = _open_lock(folder)
    if lock is None:
        return None
    with os.fdopen(lock, "wb") as f:
        with contextlib.suppress(ImportError):
            import fcntl

            fcntl.flock(f, fcntl.LOCK_EX)  # another process building it: wait, then find it built
        if target.is_file():
            return folder
        if note is not None:
            note("compiling the COLL-line reader (once per version, about 10 s)")
        tmp = Path(tempfile.mkdtemp(prefix="build-", dir=folder))
        try:
            env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(_HERE.parents[2]), os.environ.get("PYTHONPATH", "")]))
            done = subprocess.run([sys.executable, "-m", "ncclscope.sources.coll.kernel_build", str(tmp)], env=env,
                                  stdin=subprocess.DEVNULL, capture_output=True, timeout=BUILD_TIMEOUT_S)
            built = module_path(tmp)
            if done.returncode != 0 or not built.is_file():
                return None
            built.chmod(0o700)
            os.replace(built, target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return folder


def main(argv: list[str]) -> int:
    import warnings

    warnings.simplefilter("ignore")  # numba.pycc's pending-deprecation notice
    from numba.pycc import CC

    from ncclscope.sources.coll.kernel import _kernel

    cc = CC(MODULE)
    cc.output_dir = argv[0]
    cc.verbose = False
    cc.export("kernel", SIGNATURE)(_kernel)
    cc.compile()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
