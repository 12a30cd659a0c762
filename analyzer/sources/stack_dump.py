"""Python stack dumps of the ranks (``records.StackSnapshot``): where each process's main thread was.

Two shapes, as users paste them next to a hung job's log:

- py-spy (``py-spy dump --pid 4711``): ``Process 4711: python train.py``, ``Python v3.10.12 (...)``, then per thread
  ``Thread 4711 (idle): "MainThread"`` and its frames, innermost first, ``    all_reduce (torch/distributed/
  distributed_c10d.py:2050)``; with ``--native`` its C/C++ frames too (``    ncclCommAbort (libnccl.so.2)``), which the
  dump keeps going over (``native_stack`` reads them) and leaves out of the Python frames.
- faulthandler (``faulthandler.dump_traceback``, ``faulthandler.register(signal.SIGUSR1)``, a watchdog's dump):
  ``Thread 0x00007f3a1c9ff700 (most recent call first):`` (``Current thread 0x... ...`` for the dumping one) and
  ``  File "train.py", line 88 in train_step`` frames, innermost first.

A dump belongs to the rank a launcher's tag gives its lines (``[rank3]:``; lines of several ranks may interleave), else
to the rank a header line just before it names (``=== rank 3 ===``, ``rank 3 (pid 4711):``); the pid py-spy prints (or a
``--pid N`` in the header) lets the model find the rank where neither does; a file of its own whose name states the rank
(``pyspy_rank3_node1.txt``, ``stack-rank-3.log``) gives it where nothing in it does. The world size the dumped
process's command line passes its program (``--world-size 32``, fairseq's ``--distributed-world-size 32``) is read
from py-spy's ``Process N:`` line. The main thread is py-spy's ``MainThread``,
else the thread whose outermost frame is ``<module>``, else faulthandler's current thread, else the first; where that
thread is in no collective and another is (a Ray actor's main thread idles in its event loop while its task runs in
another thread), the other: the first in a collective, else the first blocked on its GPU stream (``GPU_WAIT``).
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from .native_stack import PYSPY_NATIVE_RE
from .records import Rec, StackSnapshot, WorldSize

PROCESS_RE = re.compile(r"^Process (?P<pid>\d{1,10}): \S")
PYSPY_THREAD_RE = re.compile(r'^Thread (?:0x[0-9A-Fa-f]{1,16}|\d{1,10}) \((?:idle|active|gil)[^)]{0,40}\)(?:: "(?P<name>[^"]{0,200})")?\s*$')
FAULT_THREAD_RE = re.compile(r"^(?P<cur>Current thread|Thread) 0x[0-9A-Fa-f]{4,16} \(most recent call first\):\s*$")
PYSPY_FRAME_RE = re.compile(r"^\s{1,12}(?P<func>[^\s(][^()]{0,200}?) \((?P<file>[^()\s]{1,300}):(?P<line>\d{1,7})\)\s*$")
FAULT_FRAME_RE = re.compile(r'^\s{0,8}File "(?P<file>[^"]{1,300})", line (?P<line>\d{1,7}) in (?P<func>\S{1,200})\s*$')
PYTHON_LINE_RE = re.compile(r"^Python v\d+\.\d+")
HINT_RANK_RE = re.compile(r"(?i)\brank\s{0,2}[=:#]?\s{0,2}(?P<rank>\d{1,7})\b")
HINT_PID_RE = re.compile(r"(?:--pid[= ]|\bpid[ =:]\s{0,2})(?P<pid>\d{1,10})\b")
# a file's name stating the rank of the one process it holds: the word rank before the number (pyspy_rank0_a.txt)
NAME_RANK_RE = re.compile(r"(?i)(?<![a-z])rank[_-]?(?P<rank>\d{1,7})(?!\d)")
# a program's flag giving the world size on the dumped process's command line
WORLD_FLAG_RE = re.compile(r"\s--(?:distributed[-_])?world[-_]size[= ](?P<n>\d{1,7})\b")
HINT_LINES = 3  # a header naming the rank is at most this many lines before the dump
# torch.distributed's collective and point-to-point calls, as their frames name them; the tensor forms named as their
# collective (reduce_scatter_tensor and _reduce_scatter_base are a reduce_scatter)
C10D_CALLS = frozenset({
    "all_reduce", "all_reduce_coalesced", "reduce", "broadcast", "broadcast_object_list", "all_gather",
    "all_gather_into_tensor", "_all_gather_base", "all_gather_object", "all_gather_coalesced", "reduce_scatter",
    "reduce_scatter_tensor", "_reduce_scatter_base", "all_to_all", "all_to_all_single", "barrier", "monitored_barrier",
    "gather", "gather_object", "scatter", "scatter_object_list", "send", "recv", "isend", "irecv", "batch_isend_irecv",
})
SAME_CALL = {"all_gather_into_tensor": "all_gather", "_all_gather_base": "all_gather", "reduce_scatter_tensor":
             "reduce_scatter", "_reduce_scatter_base": "reduce_scatter", "all_to_all_single": "all_to_all",
             "all_gather_tensor": "all_gather", "all_gather_tensor_autograd": "all_gather",
             "reduce_scatter_tensor_autograd": "reduce_scatter", "all_to_all_single_autograd": "all_to_all"}
# the functional collectives (torch/distributed/_functional_collectives.py: DTensor's redistribution, FSDP2), as their
# frames name them
FUNCTIONAL_CALLS = frozenset({"all_gather_tensor", "all_gather_tensor_autograd", "reduce_scatter_tensor_autograd",
                              "all_to_all_single_autograd"})
# a thread blocked until its GPU stream's work is done (``torch.cuda.synchronize()``, ``Stream.synchronize()``,
# ``Event.synchronize()``): the kernels queued before it (a collective's, a send's) never finish
GPU_WAIT = "gpu_stream_wait"
GPU_WAIT_FRAMES = frozenset({"synchronize", "wait_stream", "wait_event"})
GPU_WAIT_FILES = ("torch/cuda/streams.py", "torch/cuda/__init__.py")

# a framework's wait on a collective's handle (``_handle_wait``): the wait's own frame names, how many callers above
# it are searched, and the collective words of their names
HANDLE_WAITS = frozenset({"wait", "_wait", "wait_tensor", "synchronize"})
HANDLE_CALLERS = 4
COLL_NAME_RE = re.compile(r"(?i)all_?gather|reduce_?scatter|all_?reduce|all_?to_?all|broadcast")
COLL_WORDS = {"allgather": "all_gather", "reducescatter": "reduce_scatter", "allreduce": "all_reduce",
              "alltoall": "all_to_all", "broadcast": "broadcast"}

LIBRARY_PATHS = ("site-packages", "dist-packages", "/lib/python")
# py-spy writes an installed module's path from its package down: these are torch's and the standard library's
LIBRARY_MODULES = ("torch/", "threading.py", "queue.py", "multiprocessing/", "concurrent/", "asyncio/", "selectors.py",
                   "socket.py", "subprocess.py")


@dataclass
class _Thread:
    main: bool  # named MainThread (py-spy)
    current: bool  # faulthandler's "Current thread"
    frames: list[tuple[str, str, int]] = field(default_factory=list)  # (func, file, line), innermost first


@dataclass
class _Dump:
    line: int
    text: str
    rank: int | None
    pid: int | None
    threads: list[_Thread] = field(default_factory=list)


class StackReader:
    """Feeds on a log's lines (``read``), giving a ``StackSnapshot`` as each dump ends (``flush`` at the file's end)."""

    def __init__(self, file: str) -> None:
        self.file = file
        named = NAME_RANK_RE.search(file.rsplit("/", 1)[-1])
        self.name_rank = int(named.group("rank")) if named else None  # the first dump's only: one process per file
        self.open: dict[int | None, _Dump] = {}  # by the launcher's rank tag of the lines (None: untagged)
        self.hints: list[tuple[int, str]] = []  # the last few untagged lines: a header may name the rank

    def read(self, lineno: int, text: str, body: str, rank: int | None) -> tuple[bool, list[Rec]]:
        """(the line was a dump's, the snapshots of dumps it closed and the world size a dumped command line gives)."""
        stripped = body.rstrip()
        dump = self.open.get(rank)
        if dump is None and not ("Thread " in body or "Process " in body or "thread 0x" in body):
            self._hint(rank, lineno, stripped)
            return False, []
        out: list[Rec] = []
        p = PROCESS_RE.match(stripped)
        if p is not None:
            if dump is not None:
                out += self._close(rank)
            if (w := WORLD_FLAG_RE.search(stripped)) is not None and int(w.group("n")) > 0:
                out.append(WorldSize(self.file, lineno, text, None, None, None, None, int(w.group("n"))))
            self.open[rank] = _Dump(lineno, text, rank if rank is not None else self._hinted_rank(lineno),
                                    int(p.group("pid")))
            return True, out
        t = PYSPY_THREAD_RE.match(stripped) or FAULT_THREAD_RE.match(stripped)
        if t is not None:
            if dump is None:
                dump = self.open[rank] = _Dump(lineno, text, rank if rank is not None else self._hinted_rank(lineno),
                                               self._hinted_pid(lineno))
            d = t.groupdict()
            dump.threads.append(_Thread(d.get("name") == "MainThread", d.get("cur") == "Current thread"))
            return True, out
        if dump is None:
            self._hint(rank, lineno, stripped)
            return False, out
        f = PYSPY_FRAME_RE.match(stripped) or FAULT_FRAME_RE.match(stripped)
        if f is not None and dump.threads:
            dump.threads[-1].frames.append((f.group("func"), f.group("file"), int(f.group("line"))))
            return True, out
        if not stripped.strip() or PYTHON_LINE_RE.match(stripped) or (f is not None and not dump.threads):
            return True, out  # a blank line or py-spy's interpreter line inside a dump
        if dump.threads and PYSPY_NATIVE_RE.match(stripped):
            return True, out  # a native frame of ``py-spy dump --native`` (``sources.native_stack`` reads those)
        out += self._close(rank)
        self._hint(rank, lineno, stripped)  # the line after a dump may head the next one
        return False, out

    def flush(self) -> Iterator[Rec]:
        for rank in list(self.open):
            yield from self._close(rank)

    def _hint(self, rank: int | None, lineno: int, stripped: str) -> None:
        if rank is None and stripped:
            self.hints = [*self.hints[-(HINT_LINES - 1):], (lineno, stripped[:300])]

    def _hinted_rank(self, lineno: int) -> int | None:
        """The rank a header just before the dump names, else the rank the file's name states. A header naming only a
        pid (``$ py-spy dump --pid 4711``) is the dump's own: a rank on a line above it is another process's."""
        for n, line in reversed(self.hints):
            if lineno - n > HINT_LINES:
                continue
            if (m := HINT_RANK_RE.search(line)) is not None:
                return int(m.group("rank"))
            if HINT_PID_RE.search(line) is not None:
                break
        named, self.name_rank = self.name_rank, None
        return named

    def _hinted_pid(self, lineno: int) -> int | None:
        for n, line in reversed(self.hints):
            if lineno - n <= HINT_LINES and (m := HINT_PID_RE.search(line)) is not None:
                return int(m.group("pid"))
        return None

    def _close(self, rank: int | None) -> list[StackSnapshot]:
        dump = self.open.pop(rank, None)
        if dump is None or not dump.threads:
            return []
        main = (next((t for t in dump.threads if t.main), None)
                or next((t for t in dump.threads if t.frames and t.frames[-1][0] == "<module>"), None)
                or next((t for t in dump.threads if t.current), None) or dump.threads[0])
        if collective_of(main.frames) is None:  # an actor's main thread idles in its event loop (Ray's main_loop)
            main = next((t for t in dump.threads if collective_of(t.frames) not in (None, GPU_WAIT)), None) or next(
                (t for t in dump.threads if collective_of(t.frames) is not None), main)  # while another works
        frames = [f"{func} ({file}:{line})" for func, file, line in main.frames]
        return [StackSnapshot(self.file, dump.line, dump.text, dump.rank, None, None, None, dump.pid,
                              collective_of(main.frames), _program_frame(main.frames), frames)]


def collective_of(frames: list[tuple[str, str, int]]) -> str | None:
    """The torch.distributed call the innermost frames are in (``all_reduce``, ``reduce_scatter`` for its tensor forms,
    a functional collective as the collective it is), ``GPU_WAIT`` for a thread blocked on its GPU stream outside any,
    or None."""
    for func, file, _ in frames:
        if (func in C10D_CALLS or func in FUNCTIONAL_CALLS) and "distributed" in file:
            return SAME_CALL.get(func, func)
    if frames and frames[0][0] in GPU_WAIT_FRAMES and frames[0][1].endswith(GPU_WAIT_FILES):
        return GPU_WAIT
    return _handle_wait(frames)


def _handle_wait(frames: list[tuple[str, str, int]]) -> str | None:
    """A thread waiting on a collective's handle under a framework's own wrapper: the innermost frame a ``wait`` and one
    of the few callers above it named for a collective (DeepSpeed's ZeRO-3 fetch: ``wait`` under
    ``__all_gather_params_``; an overlap's ``_reduce_scatter_grads`` ... ``wait``): that collective, else None."""
    if not frames or frames[0][0] not in HANDLE_WAITS:
        return None
    for func, _, _ in frames[1:HANDLE_CALLERS + 1]:
        if (m := COLL_NAME_RE.search(func)) is not None:
            return COLL_WORDS[m.group(0).replace("_", "").lower()]
    return None


def _program_frame(frames: list[tuple[str, str, int]]) -> str:
    """The innermost frame of the program itself (outside site-packages and the standard library), else the
    innermost frame."""
    for func, file, line in frames:
        if not any(w in file for w in LIBRARY_PATHS) and not file.startswith(LIBRARY_MODULES):
            return f"{func} ({file}:{line})"
    return f"{frames[0][0]} ({frames[0][1]}:{frames[0][2]})" if frames else ""
