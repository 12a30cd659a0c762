"""The parse of an input as a job: its files listed and grouped (``groups``), parsed in a pool of forked
worker processes when the input is big enough to gain from it (else in this process), their results
handed back through nameless memory files (``handover``), collected in name order. Nothing the job makes
outlives the process, however it ends, but the folder an archive is extracted into (``files``).
"""
from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import signal
import tempfile
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path

from ..gc_pause import gc_paused
from ..input_names import InputError
from ..malloc import keep_freed_memory
from ..model import Format
from ..sources.coll import kernel as coll_kernel
from .files import collect_files, extraction_dir, file_size, has_archive
from .formats import Parsed
from .groups import group_files, parse_job, release_read_buffer
from .handover import ResultFiles, parse_job_to_fd

PARALLEL_MIN_BYTES = 32 * 1024 * 1024
KERNEL_MIN_BYTES = 4 * 1024 * 1024  # inputs this big use the compiled COLL reader when it is built (1 ms to load) ...
KERNEL_BUILD_MIN_BYTES = 48 * 1024 * 1024  # ... and this big build it first (once, about 10 s) if it is not
PROGRESS_MIN_BYTES = 64 * 1024 * 1024  # smaller inputs get no progress calls


class IngestJob:
    """Files being parsed: ``start_ingest`` lists and groups them and starts the worker pool at once;
    ``result()`` collects the parsed files. Between the two the caller may do other work (``analyze``
    imports pandas and the detectors, 0.25-0.3 s, while the workers parse). Use it as a context
    manager, or call ``result()``: either closes the pool, the workers' result files, the temporary
    folder of extracted archives (made only when an input is an archive) and the garbage-collector pause."""

    def __init__(self, paths: list[Path], progress: Callable[[int, int], None] | None,
                 workers: int | None, note: Callable[[str], None] | None) -> None:
        self._stack = contextlib.ExitStack()
        self._pool: ProcessPoolExecutor | None = None
        self._futures: list[Future[list[int] | bytes]] = []
        self._results: ResultFiles | None = None
        with self._stack as stack:
            tmp = extraction_dir(stack) if has_archive(paths) else Path(tempfile.gettempdir())  # used for archives only
            stack.enter_context(gc_paused())
            self.skipped: list[tuple[str, str]] = []
            files = collect_files(paths, tmp, self.skipped)
            if not files:
                raise InputError("no files found in " + ", ".join(str(p) for p in paths)
                                 + "".join(f"; {name}: {why}" for name, why in self.skipped[:5]))
            sized = [(str(p), name, file_size(p)) for p, name in files]
            self.total = sum(f[2] for f in sized)
            self.groups = group_files(sized)
            self.report = progress if progress is not None and self.total >= PROGRESS_MIN_BYTES else None
            if self.total >= KERNEL_MIN_BYTES:  # before the workers fork: they inherit it
                coll_kernel.arm(note=note, build=self.total >= KERNEL_BUILD_MIN_BYTES)
            nworkers = pool_size(self.total, len(self.groups), workers)
            if nworkers > 1:
                results = self._results = ResultFiles(len(self.groups), tempfile.gettempdir())  # before the fork
                stack.callback(results.close)
                self._pool = ProcessPoolExecutor(max_workers=nworkers, mp_context=_FORK, initializer=_worker_init, initargs=(os.getpid(),))
                self._futures = [self._pool.submit(parse_job_to_fd, g, results.fd(i))
                                 for i, g in enumerate(self.groups)]  # all forked here
            self._stack = stack.pop_all()  # started: closed by result() or close()

    def result(self) -> list[Parsed]:
        """The parsed files, sorted by name. Raises InputError when nothing at all can be read."""
        results: list[Parsed] = []
        done = 0
        try:
            if self._pool is not None and self._results is not None:
                futures, self._futures = self._futures, []
                for i, group in enumerate(self.groups):
                    got = futures.pop(0).result()  # nothing keeps a group's pickle, where one came, once it is read
                    # the layout of the group's file, or (it could not be written) the pickle itself
                    results.extend(pickle.loads(got) if isinstance(got, bytes) else self._results.take(i, got))
                    del got
                    done += sum(f[2] for f in group)
                    if self.report:
                        self.report(done, self.total)
            else:
                for group in self.groups:
                    results.extend(parse_job(group))
                    done += sum(f[2] for f in group)
                    if self.report:
                        self.report(done, self.total)
                release_read_buffer()
        finally:
            self.close()
        results += [Parsed(name, Format.SKIPPED, problem=f"{name}: {why}; skipped") for name, why in self.skipped]
        results.sort(key=lambda r: r.file)
        if not any(r.records for r in results):
            reasons = "; ".join(r.problem for r in results if r.problem) or "no NCCL, PyTorch or Flight Recorder content"
            raise InputError(f"nothing readable in the input: {reasons}")
        return results

    @property
    def parallel(self) -> bool:
        """Whether worker processes parse (this process is free until ``result()``)."""
        return self._pool is not None

    def close(self) -> None:
        """Stop the pool (work not yet started is dropped) and wait for its workers to exit: one left
        waiting for work after this process ends would live on, holding this process's stdout open;
        then the result files, the temporary folder and the collector pause."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        self._stack.close()

    def __enter__(self) -> IngestJob:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# fork, where there is one: a worker starts as a copy of this process (numpy and the parsers already
# loaded: about a millisecond), where a forkserver or spawn worker imports them again (0.1 s or more)
_FORK = multiprocessing.get_context("fork") if "fork" in multiprocessing.get_all_start_methods() else None


def pool_size(total: int, ngroups: int, workers: int | None = None) -> int:
    """Worker processes for ``total`` bytes in ``ngroups`` groups; 1 means none (parse in this
    process): below ``PARALLEL_MIN_BYTES`` the whole parse takes less than starting a pool and
    sending the records back, and one group has nothing to share out. Else ``workers``, by default
    one per core this process may run on and group."""
    if total < PARALLEL_MIN_BYTES or ngroups < 2:
        return 1
    return workers if workers is not None else min(ngroups, usable_cores())


def usable_cores() -> int:
    """The cores this process may run on: its affinity mask (a Slurm step, ``taskset`` or a container's
    cpuset binds it to a few of the machine's cores), not the machine's count (``os.cpu_count``), which on a
    128-core node bound to 8 would start 128 workers on 8 cores."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def start_ingest(paths: list[Path], progress: Callable[[int, int], None] | None = None,
                 workers: int | None = None, note: Callable[[str], None] | None = None) -> IngestJob:
    """List and group the files under ``paths`` and start parsing them (``IngestJob``); raises
    InputError when there are none. The arguments are those of ``ingest``."""
    return IngestJob(paths, progress, workers, note)


def ingest(paths: list[Path], progress: Callable[[int, int], None] | None = None,
           workers: int | None = None, note: Callable[[str], None] | None = None) -> list[Parsed]:
    """Parse every file under ``paths``. Raises InputError when nothing at all can be read.

    ``progress(bytes done, bytes in all)`` is called after each file, only when the input is at
    least ``PROGRESS_MIN_BYTES``: a small input is parsed before a bar would be seen. ``note(text)``
    hears of one-off delays (the first build of the compiled reader).
    """
    return start_ingest(paths, progress, workers, note).result()


def _worker_init(parent: int) -> None:
    """A parse worker keeps the memory it frees (``malloc.keep_freed_memory``): every group of files
    is read, joined and scanned into fresh buffers of megabytes. At 4,096 rank logs that took the
    workers' system time from 4.5 s to 0.4 s. And it ends with ``parent``, the analysing process."""
    _die_with_parent(parent)
    keep_freed_memory()


def _die_with_parent(parent: int) -> None:
    """Linux: the kernel sends this worker SIGKILL when the process that forked it ends, however it ends
    (a scheduler's SIGTERM or SIGKILL left the workers waiting on the pool's queue for ever, orphaned)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError, TypeError):
        return  # not Linux: the pool's own shutdown still ends the workers on a normal exit
    if os.getppid() != parent:  # the parent ended before the request took effect
        os._exit(1)

