"""The in-process collective tracer: patches ``torch.distributed`` and writes
``$NCCLSCOPE_RUN_DIR/ncclscope-rank<R>.jsonl`` (record types in ``records.py``).

Rules it keeps, because it runs inside someone's training:
- a collective pays one Python function, the wrapper, and no other: in it, a few attribute reads
  (``time.time``, ``sys._getframe`` and the per-thread guard are closure cells, not global and
  module lookups), one dict lookup by the calling code and instruction of what the last call from
  there used (group, tensor type, dtype, device, async: checked by identity, else ``site_entry``
  finds the group's slot and the line's format), the group's sequence number, the tensor's numel,
  ``time.time()`` and one tuple appended to a bounded deque (plus, for a blocking CPU call, its
  ``done`` tuple after the call): 12 C-level calls. The guard that traces once a collective torch
  runs through another wrapped one is one thread-local read of a list made once per thread, and an
  item set and reset around the call. No dict is built or updated, no JSON, no path or source
  work, no stack walk beyond the caller's frame, no lock, no file write. The first call of a call
  site, a list of tensors, point-to-point and a caller inside torch take the general path
  (``before`` / ``after``). The writer thread turns each tuple into its line with one ``%`` of a
  format made once per call site (``records.coll_format``) and writes in batches; when the deque
  is full the oldest record is dropped and counted;
- a blocking collective on GPU tensors costs nothing more: its ``done`` line comes from Flight
  Recorder's per-group ``pg_status``, for the collectives whose ``coll`` line was written;
- Flight Recorder is read only when due (``fr_status``): every ``NCCLSCOPE_HOOK_FR_S`` (the
  heartbeat's period) while the groups' sequence numbers move, at every heartbeat once they stop
  (a stall suspected, or a job whose collectives C++ issues), never oftener than its own measured
  cost allows (0.1 % of the time; 1 % while idle), and at exit. The heartbeat's counts come from the groups' own
  sequence numbers (one call a group), so C++ collectives (DDP) are counted without it;
  asynchronous works are checked in order per group (ops of one group complete in order), so a
  tick costs what completed since the last one, not all that is open;
- a rate budget: the writer wakes every 0.2 s and writes at most ``NCCLSCOPE_HOOK_RECORDS_S``
  (2000) per-collective records a second; above it, the oldest and the newest of each batch are
  written and the middle is counted in the heartbeat's ``sampled_out`` (Flight Recorder keeps
  every collective, and the heartbeats every group's enqueued / completed count). The newest are
  always written, so a stall, a desync or a crash still shows the collectives that led to it;
- a call budget (``budget.py``): above ``NCCLSCOPE_HOOK_CALLS_S`` (500) traced collectives a
  second, the wrappers come off for the rest of the poller's tick, where Flight Recorder reports
  every group's completion and the job has no gloo group; the heartbeat's ``untraced`` counts
  what ran meanwhile;
- every hook path is wrapped: an exception becomes an ``error`` record, never reaches user code
  or a PyTorch callback (``NCCLSCOPE_HOOK_CHAOS=all`` or ``coll,done,...`` raises inside each
  path to prove it; chaos turns the wrapper's own record-making off, so ``before`` raises);
- completion is observed from a poller thread (``work.is_completed()``, Flight Recorder
  ``pg_status``), never by a callback on PyTorch's threads;
- memory is bounded (pending works, queue, path cache, group slots, formats).

Settings (environment): ``NCCLSCOPE_RUN_DIR`` (required), ``NCCLSCOPE_HOOK_HB_S`` (1.0),
``NCCLSCOPE_HOOK_STALL_S`` (3.0), ``NCCLSCOPE_HOOK_POLL_S`` (0.1), ``NCCLSCOPE_HOOK_QUEUE``
(20000), ``NCCLSCOPE_HOOK_PENDING`` (4096), ``NCCLSCOPE_HOOK_RECORDS_S`` (2000),
``NCCLSCOPE_HOOK_CALLS_S`` (500; 0 traces every call; NCCL groups only, gloo with
``NCCLSCOPE_HOOK_BUDGET_GLOO=1``),
``NCCLSCOPE_HOOK_FR_S`` (the heartbeat's), ``NCCLSCOPE_HOOK_CHAOS``.
"""
from __future__ import annotations

import atexit
import collections
import functools
import inspect
import json
import os
import socket
import stat
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType, SimpleNamespace, TracebackType
from typing import Any, NoReturn

from . import records as R
from .budget import WRAPPERS

# name in torch.distributed -> (op as recorded, parameter holding this rank's input, point-to-point)
OPS: dict[str, tuple[str, str | None, bool]] = {
    "all_reduce": ("allreduce", "tensor", False),
    "all_reduce_coalesced": ("allreduce", "tensors", False),
    "broadcast": ("broadcast", "tensor", False),
    "reduce": ("reduce", "tensor", False),
    "all_gather": ("allgather", "tensor", False),
    "all_gather_into_tensor": ("allgather", "input_tensor", False),
    "_all_gather_base": ("allgather", "input_tensor", False),
    "all_gather_coalesced": ("allgather", "input_tensor_list", False),
    "reduce_scatter": ("reducescatter", "input_list", False),
    "reduce_scatter_tensor": ("reducescatter", "input", False),
    "_reduce_scatter_base": ("reducescatter", "input", False),
    "all_to_all": ("alltoall", "input_tensor_list", False),
    "all_to_all_single": ("alltoall", "input", False),
    "gather": ("gather", "tensor", False),
    "scatter": ("scatter", "tensor", False),
    "barrier": ("barrier", None, False),
    "send": ("send", "tensor", True),
    "recv": ("recv", "tensor", True),
    "isend": ("send", "tensor", True),
    "irecv": ("recv", "tensor", True),
}
CHAOS_POINTS = ("start", "coll", "done", "poll", "hb", "stack", "request", "write", "step", "exit")
_SENTINEL: dict[str, Any] = {"type": "__stop__"}

CONTROL_MAX = 4096  # bytes of the dump-request file read, at most
FORMATS_MAX = 4096  # call-site formats remembered per process

_TENSOR: list[Any] = [type(None)]  # torch.Tensor once the tracer starts (the hook imports no torch before)
_TRACER: Tracer | None = None
_UNLIMITED = 1 << 62  # the per-call budget where none applies
_ARMED = False
_PATCHED = False
_STARTING = False


def _env_float(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, "") or default)
    except ValueError:
        return default


def _env_int(name: str, default: int) -> int:
    try:
        return int(os.environ.get(name, "") or default)
    except ValueError:
        return default


def _numel_dtype(obj: Any) -> tuple[int | None, str | None, int | None]:
    """(numel, dtype, bytes) of a tensor or a list of tensors; Nones when unknown."""
    tensors = obj if isinstance(obj, (list, tuple)) else [obj]
    numel = 0
    nbytes = 0
    dtype = None
    for t in tensors:
        n = getattr(t, "numel", None)
        if n is None:
            return None, None, None
        k = int(n())
        numel += k
        nbytes += k * int(t.element_size())
        if dtype is None:
            dtype = str(t.dtype).replace("torch.", "")
    return numel, dtype, nbytes


def _is_cpu(obj: Any) -> bool:
    t = obj[0] if isinstance(obj, (list, tuple)) and obj else obj
    return bool(getattr(t, "is_cpu", True))


class _Group:
    """A process group as the collective path sees it: plain attributes read and set in place, so a
    collective builds no dict key and updates no dict. ``enq`` / ``done``: the newest sequence
    number issued from Python / completed by a blocking CPU call; ``sync_fmt``: its ``done`` line's
    %-format for those calls."""

    __slots__ = ("done", "enq", "name", "pg", "seqfn", "sync_fmt")

    def __init__(self, pg: Any, name: str, seqfn: Callable[[], int], sync_fmt: str) -> None:
        self.pg, self.name, self.seqfn, self.sync_fmt = pg, name, seqfn, sync_fmt
        self.enq = self.done = 0


class _Local(threading.local):
    """Per thread, ``inside[0]``: 1 while a wrapped collective runs on this thread, so one that torch
    implements with another wrapped one (``send`` with ``isend``, a torch function mode forwarding
    it) is traced once. A list made once per thread (``__init__`` runs on each thread's first
    access): the wrapper fetches it with one thread-local read and then reads and sets an item."""

    def __init__(self) -> None:
        self.inside = [0]


_tls = _Local()
_NO_WORLD = SimpleNamespace(_default_pg=None)


class Tracer:
    """One per training process, created once a process group exists."""

    def __init__(self, run_dir: Path, dist: ModuleType) -> None:
        self.dist = dist
        world = getattr(dist.distributed_c10d, "_world", None)
        self._world = world if world is not None and hasattr(world, "_default_pg") else None
        import torch

        _TENSOR[0] = torch.Tensor
        self.c10d = dist.distributed_c10d
        self.run_dir = run_dir
        self.rank = int(dist.get_rank())
        self.world = int(dist.get_world_size())
        self.backend = str(dist.get_backend())
        self.path = run_dir / f"ncclscope-rank{self.rank}.jsonl"
        self.hb_s = max(0.05, _env_float("NCCLSCOPE_HOOK_HB_S", 1.0))
        self.poll_s = max(0.01, min(self.hb_s, _env_float("NCCLSCOPE_HOOK_POLL_S", 0.1)))
        self.stall_s = max(0.1, _env_float("NCCLSCOPE_HOOK_STALL_S", 3.0))
        chaos = os.environ.get("NCCLSCOPE_HOOK_CHAOS", "")
        self.chaos = set(CHAOS_POINTS) if chaos.strip() == "all" else {c.strip() for c in chaos.split(",") if c.strip()}
        # deques: append is one C call, no lock and no wake-up of the writer (which polls).
        # ``queue``: per-collective tuples (%-format, values...); ``events``: every other record (dicts)
        self.queue_max = max(100, _env_int("NCCLSCOPE_HOOK_QUEUE", 20000))
        self.queue: collections.deque[tuple[Any, ...]] = collections.deque(maxlen=self.queue_max)
        self.events: collections.deque[dict[str, Any]] = collections.deque(maxlen=self.queue_max)
        self.write_s = 0.2
        self.records_s = max(100.0, _env_float("NCCLSCOPE_HOOK_RECORDS_S", 2000.0))
        self.sampled_out = 0
        # the per-call budget (``budget.py``): calls left this tick before the wrappers come off
        # (the first time it is spent, Flight Recorder is asked whether it covers every group)
        self.calls_s = max(0, _env_int("NCCLSCOPE_HOOK_CALLS_S", 500))
        # NCCL only: gloo's Flight Recorder can leave ``last_completed`` a few behind for good (its
        # worker threads retire works out of order), which would read as a collective never done
        self.budget_on = bool(self.calls_s) and ("gloo" not in self.backend
                                                 or os.environ.get("NCCLSCOPE_HOOK_BUDGET_GLOO") == "1")
        self.left = max(1, int(self.calls_s * self.poll_s)) if self.budget_on else _UNLIMITED
        self.can_pause = False
        self._paused_enq: int | None = None  # the groups' summed sequence numbers when they came off
        self.untraced = 0
        self._want_pause = False
        self._budget_reads = 0
        self._budget_lock = threading.Lock()
        # blocking GPU collectives whose coll line was written, per group in order: (seq, t)
        self.awaiting: dict[str, collections.deque[tuple[int, float]]] = {}
        self.n_awaiting = 0
        self.await_fmts: dict[str, str] = {}  # coll %-format -> its group, for those collectives
        self.pending: collections.deque[tuple[str, int, float, Any]] = collections.deque(
            maxlen=max(16, _env_int("NCCLSCOPE_HOOK_PENDING", 4096)))
        # per group, the collectives not yet seen complete, in issue (= sequence) order
        self.open: dict[str, collections.deque[tuple[int, float, Any]]] = {}
        self.n_open = 0
        self.max_open = self.pending.maxlen or 4096
        self.chaos_coll, self.chaos_done = "coll" in self.chaos, "done" in self.chaos
        # the wrapper makes the common record itself (no ``before``), unless chaos is asked for or
        # this torch has no _World to read the default group from
        self.fast = not self.chaos and self._world is not None
        # where the wrapper reads the default group: _World, or (not ``fast``) a stand-in whose None
        # matches no call site, so every call takes ``before``
        self.world_pgs: Any = self._world if self.fast else _NO_WORLD
        self.gloo = "gloo" in self.backend
        # (pg, op, dtype, code, line, p2p) -> (the coll line's %-format, bytes per element)
        self.formats: dict[tuple[Any, ...], tuple[str, int]] = {}
        self.done_formats: dict[tuple[str, str], str] = {}
        self.sites: dict[int, tuple[Any, ...]] = {}  # id(code) + instruction offset -> ``site_entry``
        self.dropped = 0
        self.errors: dict[str, int] = collections.Counter()
        self.done: dict[str, int] = {}  # completions seen by the poller (asynchronous works)
        self.p2p: dict[str, int] = collections.Counter()
        self.groups: dict[int, _Group | None] = {}  # id(process group) -> its slot (None: not a member)
        self._non_member = getattr(self.c10d.GroupMember, "NON_GROUP_MEMBER", None)
        # Flight Recorder's pg_status is read at a heartbeat only when it is due (``fr_status``):
        # every NCCLSCOPE_HOOK_FR_S (the heartbeat's period) while the groups' sequence numbers
        # move, every heartbeat once they stop (a stall suspected, or only C++ collectives), and
        # never oftener than its own measured cost allows (0.1 % of the time; 1 % while idle)
        self.fr_s = max(self.hb_s, _env_float("NCCLSCOPE_HOOK_FR_S", self.hb_s))
        self._fr_last: dict[str, dict[str, int | None]] = {}
        self._fr_t = -1e18
        self._fr_cost = 0.0
        self.fr_reads = 0
        self._seq_sig: Any = None
        self.step: int | None = None
        self._opt_id: int | None = None
        self._step_handle: Any = None
        self.main_ident = threading.main_thread().ident
        self.stop_event = threading.Event()
        self.flushed = threading.Event()  # set by the writer after each batch
        self.control = run_dir / "ncclscope-control" / "dump-request"
        self._req_key = self._control_key()
        self._progress_sig: Any = None
        self._last_progress = time.monotonic()
        self._gaps: collections.deque[float] = collections.deque(maxlen=20)
        self._stall_reported = False
        self._fr_status_fn: Callable[..., Any] | None = None
        self._fr_status_failed = False
        self.exit_code: int | None = None
        self.exc: tuple[type[BaseException], BaseException, TracebackType | None] | None = None
        self._finished = False
        self.writer = threading.Thread(target=self._write_loop, name="ncclscope-writer", daemon=True)
        self.ticker = threading.Thread(target=self._tick_loop, name="ncclscope-ticker", daemon=True)

    # --- plumbing ----------------------------------------------------------------------------
    def check_chaos(self, point: str) -> None:
        if point in self.chaos:
            raise RuntimeError(f"ncclscope chaos in {point}")

    def put(self, rec: dict[str, Any] | tuple[Any, ...]) -> None:
        q: collections.deque[Any] = self.queue if type(rec) is tuple else self.events
        if len(q) >= (q.maxlen or 0):
            self.dropped += 1  # the deque drops its oldest record to take this one
        q.append(rec)

    def fail(self, where: str, exc: BaseException) -> None:
        """The hook's own trouble: an ``error`` record (at most 5 per place), never an exception."""
        try:
            self.errors[where] += 1
            if self.errors[where] <= 5:
                self.put(R.error(self.rank, where, f"{type(exc).__name__}: {exc}"))
        except Exception:  # noqa: BLE001, S110 - the last line of defence
            pass

    def start(self) -> None:
        self.writer.start()
        try:
            self.put(self._start_record())
            self.check_chaos("start")
        except Exception as e:  # noqa: BLE001
            self.fail("start", e)
        try:
            # the default group is known from the start, so the heartbeat counts what C++ issues
            # on it (DDP's buckets) by its sequence number, before any Python collective
            pg = self._world._default_pg if self._world is not None else None
            self._group(pg if pg is not None else self.c10d._get_default_group())
        except Exception as e:  # noqa: BLE001
            self.fail("start", e)
        try:
            import torch.optim.optimizer as optim_mod

            self._step_handle = optim_mod.register_optimizer_step_post_hook(self._on_step)
        except Exception as e:  # noqa: BLE001
            self.fail("step", e)
        self.ticker.start()

    def _start_record(self) -> dict[str, Any]:
        import torch

        nccl = cuda = None
        if "nccl" in self.backend:
            try:
                v = torch.cuda.nccl.version()
                nccl = ".".join(str(x) for x in v) if isinstance(v, tuple) else str(v)
            except Exception:  # noqa: BLE001
                nccl = None
        cuda = torch.version.cuda
        env = {k: v for k, v in os.environ.items() if k.startswith(("NCCL_", "TORCH_", "NCCLSCOPE_"))}
        lr = os.environ.get("LOCAL_RANK")
        return R.start(self.rank, self.world, int(lr) if lr and lr.isdigit() else None, socket.gethostname(),
                       os.getpid(), self.backend, str(torch.__version__), nccl, cuda, env)

    def _on_step(self, opt: Any, args: Any, kwargs: Any) -> None:
        try:
            if self._opt_id is None:
                self._opt_id = id(opt)
            if id(opt) == self._opt_id:
                self.step = (self.step or 0) + 1
            self.check_chaos("step")
        except Exception as e:  # noqa: BLE001
            self.fail("step", e)

    # --- the collective path (training thread) ----------------------------------------------
    def _group(self, pg: Any) -> _Group | None:
        """The slot of a process group, made on its first collective (bounded); None for a
        process that is not a member of it."""
        if pg is self._non_member:
            return None
        name = str(pg.group_name)
        slot = _Group(pg, name, pg._get_sequence_number_for_group, self.done_format(name, "sync"))
        if len(self.groups) < 1024:
            self.groups[id(pg)] = slot
        return slot

    def before(self, op: str, p2p: bool, tensor: Any, group: Any,
               async_op: bool = False) -> tuple[_Group | str, int, float, bool] | None:
        """The training thread's part of a collective: one tuple into the queue (see the module doc).
        Returns what ``after`` needs, or None where it has nothing to do (a blocking GPU collective,
        whose completion comes from Flight Recorder)."""
        if self.chaos_coll:
            raise RuntimeError("ncclscope chaos in coll")
        if group is None:
            # the default group: _World's plain attribute where this torch has it (what
            # GroupMember.WORLD returns through two properties), else _get_default_group()
            pg = self._world._default_pg if self._world is not None else None
            if pg is None:
                pg = self.c10d._get_default_group()
        else:
            pg = group
        slot = self.groups.get(id(pg))
        if slot is None or slot.pg is not pg:
            slot = self._group(pg)
            if slot is None:
                return None
        pgname: _Group | str = slot
        if p2p and not self.gloo:
            # NCCL numbers send/recv apart from collectives (FR p2p_seq_id); count them ourselves
            self.p2p[slot.name] += 1
            pgname, seq = slot.name + ":p2p", self.p2p[slot.name]
        else:
            seq = slot.seqfn() + 1
            slot.enq = seq
        numel: int | None = None
        nbytes = -1
        dtype: Any = None
        cpu = True
        if type(tensor) is _TENSOR[0]:  # the common case: one plain tensor
            numel, dtype, cpu = tensor.numel(), tensor.dtype, tensor.is_cpu
        elif tensor is not None:
            if isinstance(tensor, (list, tuple)):
                numel, dname, nb = _numel_dtype(tensor)
                dtype, nbytes = dname, (-1 if nb is None else nb)
            elif hasattr(tensor, "numel"):
                numel, dtype = int(tensor.numel()), tensor.dtype
            cpu = _is_cpu(tensor)
        site = R.call_site(sys._getframe(2))
        # a blocking GPU collective's completion comes from Flight Recorder (``awaits``); the key's
        # layout is the one the wrapper's own lookup builds
        awaits = not (cpu or async_op or p2p)
        key = (pgname, op, dtype, site[0] if site else None, site[1] if site else None, p2p, numel is not None, awaits)
        fmt = self.formats.get(key)
        if fmt is None:
            fmt = self._coll_format(key, tensor)
        t = time.time()
        q = self.queue
        if len(q) == q.maxlen:
            self.dropped += 1  # the deque drops its oldest record to take this one
        if numel is None:
            q.append((fmt[0], t, seq))
        else:
            q.append((fmt[0], t, seq, numel, numel * fmt[1] if nbytes < 0 else nbytes))
        return None if awaits else (pgname, seq, t, cpu)

    def site_entry(self, op: str, pg: Any, tensor: Any, code: Any, lasti: int, async_op: bool) -> tuple[Any, ...] | None:
        """What the wrapper remembers of a call site, (code, lasti, group, dtype, cpu, async_op,
        slot, coll format, bytes per element, tensor type, queue length that drops a record),
        once its group's slot and its line format exist
        (after the first call, which ``before`` makes); None where ``before`` must run: a caller
        inside torch, a list of tensors, chaos, or a full cache."""
        if not self.fast or type(tensor) is not _TENSOR[0]:
            return None
        slot = self.groups.get(id(pg))
        if slot is None or slot.pg is not pg:
            return None
        hit = R._LIB_CODE.get(id(code))
        if hit is None or hit[0] is not code or hit[1]:
            return None
        dtype, cpu = tensor.dtype, tensor.is_cpu
        fmt = self.formats.get((slot, op, dtype, id(code), lasti, False, True, not (cpu or async_op)))
        if fmt is None:
            return None
        entry = (code, lasti, pg, dtype, cpu, async_op, slot, fmt[0], fmt[1], _TENSOR[0], self.queue_max)
        if len(self.sites) < FORMATS_MAX:
            self.sites[id(code) + lasti] = entry
        return entry

    def _coll_format(self, key: tuple[Any, ...], tensor: Any) -> tuple[str, int]:
        """The %-format of a call site's ``coll`` lines, and the element size of its dtype."""
        group, op, dtype, code_id, lasti, p2p, sized, awaits = key
        pgname = group.name if isinstance(group, _Group) else group
        site = None if code_id is None else (code_id, lasti)
        dname = dtype if dtype is None or isinstance(dtype, str) else str(dtype).replace("torch.", "")
        itemsize = 0
        if sized and not isinstance(tensor, (list, tuple)):
            itemsize = int(tensor.element_size())
        fmt = (R.coll_format(self.rank, pgname, op, dname, R.site_text(site), p2p, sized), itemsize)
        if len(self.formats) < FORMATS_MAX:
            self.formats[key] = fmt
            if awaits:
                self.await_fmts[fmt[0]] = pgname
        return fmt

    def done_format(self, pgname: str, how: str) -> str:
        fmt = self.done_formats.get((pgname, how))
        if fmt is None:
            fmt = R.done_format(self.rank, pgname, how)
            if len(self.done_formats) < FORMATS_MAX:
                self.done_formats[(pgname, how)] = fmt
        return fmt

    def after(self, token: tuple[_Group | str, int, float, bool], result: Any, async_op: bool) -> None:
        if self.chaos_done:
            raise RuntimeError("ncclscope chaos in done")
        group, seq, t0, cpu = token
        work = result if async_op and hasattr(result, "is_completed") else None
        if work is None and cpu and not async_op:
            # a synchronous call on CPU tensors has completed when it returns
            now = time.time()
            if type(group) is _Group:
                fmt = group.sync_fmt
                group.done = seq
            else:
                fmt = self.done_format(str(group), "sync")
            q = self.queue
            if len(q) == q.maxlen:
                self.dropped += 1
            q.append((fmt, now, seq, (now - t0) * 1000.0))
        else:
            # asynchronous works, point-to-point and blocking CPU p2p: the poller sees them complete
            self.pending.append((group.name if isinstance(group, _Group) else group, seq, t0, work))

    # --- the poller thread -------------------------------------------------------------------
    def _fr_status(self) -> dict[str, dict[str, int | None]]:
        """Flight Recorder ``pg_status`` (keys: process group ids) or {} where there is none."""
        if self._fr_status_failed:
            return {}
        import torch._C._distributed_c10d as C

        names = (["_dump_nccl_trace_json"] if "nccl" in self.backend else []) + ["_dump_fr_trace_json"]
        fns = [self._fr_status_fn] if self._fr_status_fn is not None else [getattr(C, n, None) for n in names]
        for fn in fns:
            if fn is None:
                continue
            try:
                raw = fn(includeCollectives=False)
            except Exception:  # noqa: BLE001, S112 - try the next one
                continue
            self._fr_status_fn = fn
            obj = json.loads(raw)
            out: dict[str, dict[str, int | None]] = {}
            for pgid, st in (obj.get("pg_status") or {}).items():
                if isinstance(st, dict):
                    out[str(pgid)] = {k: _to_int(st.get(f"last_{k}_collective")) for k in ("enqueued", "started", "completed")}
            return out
        self._fr_status_failed = True
        return {}

    def fr_status(self, idle: bool = False, force: bool = False) -> dict[str, dict[str, int | None]]:
        """Flight Recorder's ``pg_status`` when a read is due, else the one read last: due every
        ``fr_s`` while the groups progress, every heartbeat while they are ``idle`` (no sequence
        number moved: a stall suspected, or collectives that only C++ issues), and never oftener
        than 1000 (idle: 100) times the last read's own cost, whatever this torch makes it cost
        (a read that dumps the whole ring while holding the GIL is then made rarely, not every
        second; the few microseconds that ``includeCollectives=False`` costs where it is honoured
        keep the heartbeat's period)."""
        now = time.monotonic()
        if not force:
            period = max(0.5 * self.hb_s, 100.0 * self._fr_cost) if idle else max(self.fr_s, 1000.0 * self._fr_cost)
            if now - self._fr_t < 0.9 * period:  # 0.9: a heartbeat a little early is still due
                return self._fr_last
        t0 = time.perf_counter()
        status = self._fr_status()
        self._fr_cost = max(time.perf_counter() - t0, 0.5 * self._fr_cost)
        self._fr_t = now
        self.fr_reads += 1
        self._fr_last = status
        return status

    def poll(self) -> dict[str, dict[str, int | None]]:
        """Completion of the open collectives, group by group from the oldest: a tick costs the ones
        that completed since the last tick, plus one look at the newest of each group."""
        self.check_chaos("poll")
        opened = self.open
        while self.pending:
            pgname, seq, t0, work = self.pending.popleft()
            q = opened.get(pgname)
            if q is None:
                q = opened[pgname] = collections.deque()
            q.append((seq, t0, work))
            self.n_open += 1
        while self.n_open > self.max_open:
            max(opened.values(), key=len).popleft()
            self.n_open -= 1
            self.dropped += 1
        status: dict[str, dict[str, int | None]] = {}
        if not self.n_open:
            return status
        if any(q and q[0][2] is None for q in opened.values()):
            status = self._fr_last  # no read of its own: the heartbeat's, when one was due
        now_t = now_pc = time.time()  # t0 of a collective is wall time
        for pgname, q in opened.items():
            if not q:
                continue
            fr_done = (status.get(pgname) or {}).get("completed")
            last_seq, _t0, last_work = q[-1]
            # ops of one group complete in order: a completed newest work completes all before it
            upto = last_seq if last_work is not None and _completed(last_work) else None
            while q:
                seq, t0, work = q[0]
                if work is not None:
                    if not (seq == upto or _completed(work)):
                        break
                    dur = _work_duration(work)
                    how, dur_ms = "work", dur if dur is not None else (now_pc - t0) * 1000.0
                elif fr_done is not None and fr_done >= seq:
                    how, dur_ms = "fr", (now_pc - t0) * 1000.0
                elif upto is not None and seq < upto:
                    how, dur_ms = "order", (now_pc - t0) * 1000.0
                else:
                    break
                q.popleft()
                self.n_open -= 1
                self.put((self.done_format(pgname, how), now_t, seq, dur_ms))
                if not pgname.endswith(":p2p") and seq > self.done.get(pgname, 0):
                    self.done[pgname] = seq
        return status

    def _complete_awaiting(self, status: dict[str, dict[str, int | None]]) -> None:
        """``done`` lines for the written blocking GPU collectives that Flight Recorder says completed."""
        now_t = time.time()
        for pgname, q in self.awaiting.items():
            fr_done = (status.get(pgname) or {}).get("completed")
            if fr_done is None:
                continue
            while q and q[0][0] <= fr_done:
                seq, t = q.popleft()
                self.n_awaiting -= 1
                self.put((self.done_format(pgname, "fr"), now_t, seq, max(0.0, (now_t - t) * 1000.0)))

    def await_done(self, pgname: str, seq: int, t: float) -> None:
        """The writer wrote this blocking GPU collective's coll line: its done line follows (bounded)."""
        q = self.awaiting.get(pgname)
        if q is None:
            q = self.awaiting[pgname] = collections.deque()
        q.append((seq, t))
        self.n_awaiting += 1
        if self.n_awaiting > self.max_open:
            max(self.awaiting.values(), key=len).popleft()
            self.n_awaiting -= 1
            self.dropped += 1

    def group_counts(self) -> tuple[dict[str, int], dict[str, int]]:
        """(enqueued, completed) per group as this process knows them without Flight Recorder: the
        groups' own sequence numbers (C++ collectives included), the blocking CPU calls returned
        and the works the poller saw complete."""
        enq: dict[str, int] = {}
        done = dict(self.done)
        for slot in list(self.groups.values()):
            if slot is None:
                continue
            e = slot.enq
            try:
                e = max(e, int(slot.seqfn()))
            except Exception:  # noqa: BLE001, S110 - a destroyed group: what Python saw
                pass
            if e:  # a group that has had no collective yet is not reported (nor judged stalled)
                enq[slot.name] = max(enq.get(slot.name, 0), e)
            if slot.done > done.get(slot.name, 0):
                done[slot.name] = slot.done
        return enq, done

    def over_budget(self) -> None:
        """This tick's call budget is spent (called by a wrapper, once a tick): torch's own
        functions go back in until ``budget_tick``, where Flight Recorder covers completion."""
        self.left = _UNLIMITED
        if not self.budget_on:
            return
        if not self.can_pause:
            self._want_pause = True  # ``budget_tick`` asks Flight Recorder now, not at the next heartbeat
            return
        if self.stop_event.is_set() or not self._budget_lock.acquire(blocking=False):
            return  # never wait on the training thread: the poller is turning them; next tick then
        try:
            if self._paused_enq is None:  # not off already (the tracer alone turns them)
                self._paused_enq = sum(self.group_counts()[0].values())
                WRAPPERS.turn(False)
        finally:
            self._budget_lock.release()

    @staticmethod
    def fr_covers(status: dict[str, dict[str, int | None]], enq: dict[str, int]) -> bool:
        """Flight Recorder reports completion for every group that has issued a collective."""
        return bool(status) and all(name in status for name in enq)

    def budget_tick(self) -> None:
        """Every poll: the wrappers back in, the calls made without them counted, a fresh budget."""
        with self._budget_lock:
            if self._paused_enq is not None:
                WRAPPERS.turn(True)
                self.untraced += max(0, sum(self.group_counts()[0].values()) - self._paused_enq)
                self._paused_enq = None
        if self._want_pause and not self.can_pause:
            self._want_pause = False
            enq = self.group_counts()[0]
            status = self.fr_status()
            if not self.fr_covers(status, enq) and self._budget_reads < 3 and self._fr_cost < 0.05:
                # the last read may predate these groups' first collective: read again now, a few
                # times a process at most and only where a read is cheap
                self._budget_reads += 1
                status = self.fr_status(force=True)
            self.can_pause = self.fr_covers(status, enq)
        self.left = max(1, int(self.calls_s * self.poll_s)) if self.can_pause and self.budget_on and self.calls_s else _UNLIMITED

    def heartbeat(self, fresh_fr: bool = False) -> None:
        self.check_chaos("hb")
        enq, done = self.group_counts()
        seq_sig = tuple(sorted(enq.items()))
        idle = seq_sig == self._seq_sig
        self._seq_sig = seq_sig
        status = self.fr_status(idle=idle, force=fresh_fr)
        # calls may go untraced only where Flight Recorder tells every group's completion
        self.can_pause = self.fr_covers(status, enq)
        if self.n_awaiting:
            # the done lines of the blocking GPU collectives come with the Flight Recorder reads
            self._complete_awaiting(status)
        pgs: dict[str, dict[str, int | None]] = {}
        for name in set(enq) | set(done) | set(status):
            st = status.get(name) or {}
            e = max(enq.get(name, 0), st.get("enqueued") or 0)
            dn = max(done.get(name, 0), st.get("completed") or 0)
            started = st.get("started")
            pgs[name] = {"enq": e, "start": started if started is not None and started >= 0 else None, "done": dn}
        self.put(R.heartbeat(self.rank, self.step, pgs, self.dropped, self.sampled_out, self.untraced))
        sig = tuple(sorted((k, v["enq"], v["done"]) for k, v in pgs.items()))
        now = time.monotonic()
        if sig != self._progress_sig:
            if self._progress_sig is not None:
                self._gaps.append(now - self._last_progress)
            self._progress_sig = sig
            self._last_progress = now
            self._stall_reported = False
        elif sig and not self._stall_reported and now - self._last_progress > self.stall_threshold():
            self._stall_reported = True
            self.write_stack("stall", stalled_s=round(now - self._last_progress, 3))

    def stall_threshold(self) -> float:
        """``NCCLSCOPE_HOOK_STALL_S``, or three times the job's usual gap between progress, if longer."""
        if len(self._gaps) >= 5:
            gaps = sorted(self._gaps)
            return max(self.stall_s, 3.0 * gaps[len(gaps) // 2])
        return self.stall_s

    def write_stack(self, reason: str, **extra: Any) -> None:
        self.check_chaos("stack")
        frame = sys._current_frames().get(self.main_ident) if self.main_ident is not None else None
        frames = R.frames_of(frame, limit=400)
        del frame
        self.put(R.stack(self.rank, reason, R.where_of(frames), R.trim(frames), **extra))

    def _control_key(self) -> tuple[int, int, int] | None:
        """The dump-request file's identity, or None where there is none (or it, or its folder, is a link)."""
        try:
            if stat.S_ISLNK(os.lstat(self.control.parent).st_mode):
                return None
            st = os.lstat(self.control)
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode):
            return None
        return (st.st_mtime_ns, st.st_size, st.st_ino)

    def check_request(self) -> None:
        key = self._control_key()
        if key is None or key == self._req_key:
            return
        self._req_key = key
        self.check_chaos("request")
        req_id: Any = None
        try:
            req_id = json.loads(read_control(self.control)).get("id")
        except (OSError, ValueError, AttributeError, RecursionError):
            req_id = None
        try:
            self.write_stack("request", request_id=req_id)
        except Exception as e:  # noqa: BLE001
            self.fail("stack", e)
        path = self.dump_fr()
        if path is not None:
            self.put(R.fr(self.rank, str(path), req_id))

    def dump_fr(self, stem: str = "fr_live", stacks: bool = True) -> Path | None:
        """Flight Recorder pickle to ``<stem>_rank<R>.pkl`` (written aside, then renamed)."""
        import torch._C._distributed_c10d as C

        names = (["_dump_nccl_trace"] if "nccl" in self.backend else []) + ["_dump_fr_trace"]
        for n in names:
            fn = getattr(C, n, None)
            if fn is None:
                continue
            try:
                data = fn(True, stacks, False)
            except TypeError:
                try:
                    data = fn()
                except Exception:  # noqa: BLE001, S112
                    continue
            except Exception:  # noqa: BLE001, S112
                continue
            if not data or len(data) < 64:
                continue
            dest = self.run_dir / f"{stem}_rank{self.rank}.pkl"
            tmp = self.run_dir / f".{stem}_rank{self.rank}.pkl.tmp"
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, dest)
            return dest
        return None

    def _tick_loop(self) -> None:
        last_hb = 0.0
        while not self.stop_event.wait(self.poll_s):
            try:
                self.poll()
            except Exception as e:  # noqa: BLE001
                self.fail("poll", e)
            try:
                self.budget_tick()
            except Exception as e:  # noqa: BLE001
                self.fail("budget", e)
            now = time.monotonic()
            if now - last_hb < self.hb_s:
                continue
            last_hb = now
            try:
                self.heartbeat()
            except Exception as e:  # noqa: BLE001
                self.fail("hb", e)
            try:
                self.check_request()
            except Exception as e:  # noqa: BLE001
                self.fail("request", e)

    # --- the writer thread -------------------------------------------------------------------
    @staticmethod
    def lines(batch: list[Any]) -> str:
        """The text of a batch: a tuple is (%-format, values...), anything else a record dict."""
        return "".join([r[0] % r[1:] if type(r) is tuple else json.dumps(r, default=str, separators=(",", ":")) + "\n"
                        for r in batch])

    def take(self, allowed: int) -> list[Any]:
        """What to write now: at most ``allowed`` per-collective tuples (the oldest and the newest
        half of those queued; the count left out goes to ``sampled_out``), then every other record.
        C-speed whatever the backlog (the queue is swapped for a fresh one and sliced), so the
        writer holds the GIL for the records it writes, not for those it leaves out. The blocking
        GPU collectives written are handed to the poller for their ``done`` lines."""
        batch: list[Any] = []
        if self.queue:
            old, self.queue = self.queue, collections.deque(maxlen=self.queue_max)
            time.sleep(0.001)  # let an append that fetched ``old`` just before the swap land in it
            batch = list(old)
            if len(batch) > allowed:
                self.sampled_out += len(batch) - allowed
                batch = batch[: allowed // 2] + batch[len(batch) - (allowed - allowed // 2):]
            fmts = self.await_fmts
            if fmts:
                for r in batch:
                    if r[0] in fmts:
                        self.await_done(fmts[r[0]], r[2], r[1])
        ev = self.events
        if ev:
            batch += [ev.popleft() for _ in range(len(ev))]
        return batch

    def _write_loop(self) -> None:
        f = None
        next_open = 0.0
        allowed = max(64, int(self.records_s * self.write_s))
        stop = False
        while not stop:
            # one wake-up per write_s, not one per record: the training thread shares the GIL with us
            time.sleep(self.write_s)
            if not self.queue and not self.events:
                self.flushed.set()
                continue
            batch = self.take(allowed)
            stop = any(r is _SENTINEL for r in batch)
            if stop:
                batch = [r for r in batch if r is not _SENTINEL]
            try:
                self.check_chaos("write")
                text = self.lines(batch)
                if f is None and time.monotonic() >= next_open:
                    try:
                        f = open(self.path, "a", encoding="utf-8")  # noqa: SIM115
                    except OSError:
                        next_open = time.monotonic() + 5.0
                if f is None:
                    self.dropped += len(batch)
                else:
                    f.write(text)
                    f.flush()
            except Exception as e:  # noqa: BLE001 - disk full, folder gone, chaos: drop and go on
                self.dropped += len(batch)
                self.errors["write"] += 1
                if self.errors["write"] <= 5 and "write" not in self.chaos:
                    self.put(R.error(self.rank, "write", f"{type(e).__name__}: {e}"))
            self.flushed.set()
        if f is not None:
            try:
                f.close()
            except OSError:
                pass

    # --- the end -------------------------------------------------------------------------------
    def finish(self) -> None:
        """At interpreter exit: a last heartbeat, the exit record, then drain the queue (bounded wait)."""
        if self._finished:
            return
        self._finished = True
        self.stop_event.set()
        if self.ticker.is_alive():
            self.ticker.join(timeout=1.0)
        try:
            self.budget_tick()  # the wrappers back in, the calls made without them counted
        except Exception as e:  # noqa: BLE001
            self.fail("budget", e)
        # one more batch written, so the last blocking GPU collectives await their done lines
        self.flushed.clear()
        if self.writer.is_alive():
            self.flushed.wait(timeout=2 * self.write_s + 0.5)
        try:
            self.check_chaos("exit")
            self.poll()
            self.heartbeat(fresh_fr=True)
        except Exception as e:  # noqa: BLE001
            self.fail("exit", e)
        try:
            # the whole Flight Recorder ring (DDP's C++ collectives included, with their enqueue times):
            # what straggler and desync analysis need after a run that ended normally
            if os.environ.get("NCCLSCOPE_FR_AT_EXIT", "1") != "0":
                self.dump_fr("fr_end", stacks=False)
        except Exception as e:  # noqa: BLE001
            self.fail("exit_fr", e)
        try:
            exc_text = None
            if self.exc is not None:
                etype, value, tb = self.exc
                exc_text = f"{etype.__name__}: {value}"
                frames = []
                while tb is not None and tb.tb_next is not None:
                    tb = tb.tb_next
                if tb is not None:
                    frames = R.frames_of(tb.tb_frame, limit=400)
                    frames[0]["line"] = tb.tb_lineno
                self.put(R.stack(self.rank, "exit", R.where_of(frames), R.trim(frames), exception=exc_text[:500]))
            code = self.exit_code if self.exit_code is not None else (1 if self.exc is not None else 0)
            self.put(R.exit_(self.rank, code, exc_text))
        except Exception as e:  # noqa: BLE001
            self.fail("exit", e)
        try:
            if self._step_handle is not None:
                self._step_handle.remove()
        except Exception:  # noqa: BLE001, S110
            pass
        self.events.append(_SENTINEL)
        self.writer.join(timeout=2.0)


def read_control(path: Path) -> str:
    """The dump-request file's first ``CONTROL_MAX`` bytes: a regular file only, opened without
    following a link and without blocking (a FIFO, a device or a link to /dev/zero raises OSError)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NOCTTY", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        return os.read(fd, CONTROL_MAX).decode("utf-8", "replace")
    finally:
        os.close(fd)


def _completed(work: Any) -> bool:
    try:
        return bool(work.is_completed())
    except Exception:  # noqa: BLE001 - a failed work counts as finished
        return True


def _to_int(v: Any) -> int | None:
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def _work_duration(work: Any) -> float | None:
    fn = getattr(work, "_get_duration", None)
    if fn is None:
        return None
    try:
        d = float(fn())
    except Exception:  # noqa: BLE001 - gloo, or timing off
        return None
    return d if d >= 0 else None


# --- activation ----------------------------------------------------------------------------------

def _maybe_start() -> None:
    """Create the tracer once a process group exists (called after init_process_group, or lazily)."""
    global _TRACER, _STARTING
    if _TRACER is not None or _STARTING or not _ARMED:
        return
    _STARTING = True
    try:
        import torch.distributed as dist

        if not dist.is_initialized():
            return
        run_dir = os.environ.get("NCCLSCOPE_RUN_DIR")
        if not run_dir:
            return
        tracer = Tracer(Path(run_dir), dist)
        _TRACER = tracer
        tracer.start()
        atexit.register(_at_exit)
    except Exception as e:  # noqa: BLE001
        _TRACER = None
        _note(f"collective tracing disabled ({type(e).__name__}: {e})")
    finally:
        _STARTING = False


def _note(text: str) -> None:
    try:
        sys.stderr.write(f"ncclscope hook: {text}\n")
    except Exception:  # noqa: BLE001, S110
        pass


def _at_exit() -> None:
    tr = _TRACER
    if tr is not None:
        try:
            tr.finish()
        except Exception:  # noqa: BLE001, S110
            pass


def _wrap(fn: Callable[..., Any], op: str, in_param: str | None, p2p: bool) -> Callable[..., Any]:
    try:
        params = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        params = []

    def pos(name: str | None) -> int:
        # an index past any call's arguments where the parameter is unknown: then only kwargs give it
        return params.index(name) if name is not None and name in params else 1 << 30

    i_in, i_group, i_async = pos(in_param), pos("group"), pos("async_op")
    always_async = fn.__name__ in ("isend", "irecv")
    p2p_op = p2p or op in ("send", "recv")
    alone = i_in == 0  # a call with one positional argument passes the input alone: default group, blocking
    tls, getframe, now_s = _tls, sys._getframe, time.time  # closure cells: no global and attribute loads a call

    def slow(args: tuple[Any, ...], kwargs: dict[str, Any], inside: list[int]) -> Any:
        """Before the tracer exists (it may start here), and inside another wrapped call."""
        if _TRACER is None and _ARMED and not inside[0]:
            _maybe_start()
            if _TRACER is not None:
                return wrapper(*args, **kwargs)
        return fn(*args, **kwargs)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        tr = _TRACER
        inside = tls.inside
        if tr is None or inside[0]:
            return slow(args, kwargs, inside)
        then = 0  # after the call: 0 nothing (a blocking GPU call), 1 the blocking CPU call's done tuple, 2 ``after``
        async_op = always_async
        token: Any
        try:
            left = tr.left - 1
            tr.left = left
            if left < 0:
                tr.over_budget()
            n = len(args)
            tensor: Any
            if kwargs:
                tensor = args[i_in] if i_in < n else kwargs.get(in_param)  # type: ignore[arg-type]
                group = args[i_group] if i_group < n else kwargs.get("group")
                async_op = always_async or bool(args[i_async] if i_async < n else kwargs.get("async_op"))
            elif n == 1 and alone:
                tensor, group = args[0], None
            else:
                tensor = args[i_in] if i_in < n else None
                group = args[i_group] if i_group < n else None
                async_op = always_async or (i_async < n and bool(args[i_async]))
            e: Any = None
            if not p2p_op:
                # the common case: one dict lookup, by the calling code and instruction, of what the
                # last call from there used (group, tensor type, dtype, device, async), checked by
                # identity (the entry holds the code, so the same code means the same instruction); a
                # miss asks ``site_entry`` (group slot, caller's code, line format), then ``before``
                pg = group if group is not None else tr.world_pgs._default_pg
                frame = getframe(1)
                code = frame.f_code
                e = tr.sites.get(id(code) + frame.f_lasti)
                if (e is None or e[0] is not code or e[2] is not pg or type(tensor) is not e[9]
                        or e[3] is not tensor.dtype or e[4] is not tensor.is_cpu or e[5] is not async_op):
                    e = tr.site_entry(op, pg, tensor, code, frame.f_lasti, async_op)
                del frame
            if e is not None:
                slot = e[6]
                seq = slot.seqfn() + 1
                slot.enq = seq
                numel = tensor.numel()
                t = now_s()
                q = tr.queue
                if len(q) == e[10]:
                    tr.dropped += 1  # the deque drops its oldest record to take this one
                q.append((e[7], t, seq, numel, numel * e[8]))
                if async_op:
                    token, then = (slot, seq, t, e[4]), 2
                elif e[4]:
                    then = 1
            else:
                token = tr.before(op, p2p_op, tensor, group, async_op)
                if token is not None:
                    then = 2
        except Exception as exc:  # noqa: BLE001
            tr.fail("coll", exc)
        inside[0] = 1
        try:
            result = fn(*args, **kwargs)
        finally:
            inside[0] = 0
        if then:
            try:
                if then == 1:
                    # a synchronous call on CPU tensors has completed when it returns
                    now = now_s()
                    q = tr.queue
                    if len(q) == e[10]:
                        tr.dropped += 1
                    q.append((slot.sync_fmt, now, seq, (now - t) * 1000.0))
                    slot.done = seq
                else:
                    tr.after(token, result, async_op)
            except Exception as exc:  # noqa: BLE001
                tr.fail("done", exc)
        return result

    wrapper.__ncclscope_wrapped__ = True  # type: ignore[attr-defined]
    return wrapper


def _wrap_init(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def init_process_group(*args: Any, **kwargs: Any) -> Any:
        result = fn(*args, **kwargs)
        try:
            _maybe_start()
        except Exception:  # noqa: BLE001, S110
            pass
        return result

    init_process_group.__ncclscope_wrapped__ = True  # type: ignore[attr-defined]
    return init_process_group


def patch_distributed(dist: ModuleType) -> None:
    """Wrap the ``torch.distributed`` collectives (module and ``distributed_c10d`` namespaces)."""
    global _PATCHED
    if _PATCHED:
        return
    _PATCHED = True
    c10d = getattr(dist, "distributed_c10d", None)
    if c10d is None:
        return
    for name, (op, in_param, p2p) in OPS.items():
        fn = getattr(c10d, name, None)
        if fn is None or not callable(fn) or getattr(fn, "__ncclscope_wrapped__", False):
            continue
        w = _wrap(fn, op, in_param, p2p)
        setattr(c10d, name, w)
        WRAPPERS.add(c10d, name, fn, w)
        if getattr(dist, name, None) is fn:
            setattr(dist, name, w)
            WRAPPERS.add(dist, name, fn, w)
    fn = getattr(c10d, "init_process_group", None)
    if fn is not None and not getattr(fn, "__ncclscope_wrapped__", False):
        w = _wrap_init(fn)
        c10d.init_process_group = w
        if getattr(dist, "init_process_group", None) is fn:
            setattr(dist, "init_process_group", w)  # noqa: B010 - mypy rejects new attributes on a ModuleType


def _disable_in_child() -> None:
    global _TRACER, _ARMED
    _TRACER = None
    _ARMED = False


def _wrap_exit_paths() -> None:
    prev_hook = sys.excepthook
    prev_exit = sys.exit

    def excepthook(etype: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
        tr = _TRACER
        if tr is not None and tr.exc is None:
            tr.exc = (etype, value, tb)
        prev_hook(etype, value, tb)

    def exit(status: Any = None) -> NoReturn:  # mirrors sys.exit
        tr = _TRACER
        if tr is not None:
            tr.exit_code = status if isinstance(status, int) else (0 if status is None else 1)
        prev_exit(status)

    sys.excepthook = excepthook
    sys.exit = exit


def on_distributed_imported(dist: ModuleType) -> None:
    """Called by the ``sitecustomize`` shim right after ``torch.distributed`` is imported."""
    global _ARMED
    if not os.environ.get("NCCLSCOPE_RUN_DIR"):
        return
    try:
        if not dist.is_available():
            return
        patch_distributed(dist)
        _ARMED = True
        _wrap_exit_paths()
        os.register_at_fork(after_in_child=_disable_in_child)
    except Exception as e:  # noqa: BLE001
        _note(f"collective tracing disabled ({type(e).__name__}: {e})")
