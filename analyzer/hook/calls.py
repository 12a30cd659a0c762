"""The hook's hot path: what a traced collective costs the training thread (see ``tracer``'s module doc
for the rules it keeps). ``make_wrapper`` wraps one ``torch.distributed`` function; the wrapper reads
the active ``CallPath`` (``activate``), finds what the last call from the same code and instruction
used (a ``CallSite``), and appends one tuple to the writer's queue. Everything else (the first call of
a site, lists of tensors, point-to-point, a caller inside torch, chaos) goes through
``CallPath.before`` / ``after``. Standard library only; torch is reached through the objects given.
"""
from __future__ import annotations

import collections
import functools
import inspect
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import CodeType, ModuleType, SimpleNamespace
from typing import Any

from . import records as R
from .chaos import Chaos
from .writer import Writer

FORMATS_MAX = 4096  # call-site formats remembered per process
UNLIMITED = 1 << 62  # the per-call budget where none applies
TENSOR: list[Any] = [type(None)]  # torch.Tensor once the tracer starts (the hook imports no torch before)
_NO_WORLD = SimpleNamespace(_default_pg=None)


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


class GroupSlot:
    """A process group as the collective path sees it: plain attributes read and set in place, so a
    collective builds no dict key and updates no dict. ``enq`` / ``done``: the newest sequence
    number issued from Python / completed by a blocking CPU call; ``sync_fmt``: its ``done`` line's
    %-format for those calls."""

    __slots__ = ("done", "enq", "name", "pg", "seqfn", "sync_fmt")

    def __init__(self, pg: Any, name: str, seqfn: Callable[[], int], sync_fmt: str) -> None:
        self.pg, self.name, self.seqfn, self.sync_fmt = pg, name, seqfn, sync_fmt
        self.enq = self.done = 0


@dataclass(eq=False)
class CallSite:
    """What the wrapper remembers of a call site: what its last call used (checked by identity on
    the next call) and what its records need. Slots: the wrapper reads each field as one attribute
    load, as cheap as an index into a tuple."""

    __slots__ = ("async_op", "code", "cpu", "dtype", "fmt", "itemsize", "lasti", "pg", "queue_max", "slot",
                 "tensor_type")
    code: CodeType  # the caller's code, and the instruction of the call in it
    lasti: int
    pg: Any  # the process group of the call
    dtype: Any  # the tensor's
    cpu: bool  # the tensor's is_cpu
    async_op: bool
    slot: GroupSlot
    fmt: str  # the coll line's %-format of (t, seq, numel, bytes)
    itemsize: int  # bytes per element
    tensor_type: Any  # torch.Tensor: a subclass takes ``before``
    queue_max: int  # the writer queue's length at which an append drops a record


class _Local(threading.local):
    """Per thread, ``inside[0]``: 1 while a wrapped collective runs on this thread, so one that torch
    implements with another wrapped one (``send`` with ``isend``, a torch function mode forwarding
    it) is traced once. A list made once per thread (``__init__`` runs on each thread's first
    access): the wrapper fetches it with one thread-local read and then reads and sets an item."""

    def __init__(self) -> None:
        self.inside = [0]


_tls = _Local()


def _no_budget() -> None:
    return None


class CallPath:
    """The training thread's part of every collective: group slots, call sites and line formats
    (bounded), the records it appends to the writer's queue, the asynchronous works it hands to the
    poller (``pending``) and the call budget's count (``left``, refilled by the poller's tick)."""

    __slots__ = ("_non_member", "_world", "await_fmts", "c10d", "chaos_coll", "chaos_done", "done_formats", "fast",
                 "formats", "gloo", "groups", "left", "on_spent", "p2p", "pending", "rank", "sites", "world_pgs",
                 "writer")

    def __init__(self, c10d: ModuleType, world: Any, rank: int, backend: str, writer: Writer, chaos: Chaos,
                 pending_max: int) -> None:
        self.c10d = c10d
        self._world = world
        self.rank = rank
        self.writer = writer
        self.chaos_coll, self.chaos_done = "coll" in chaos, "done" in chaos
        # the wrapper makes the common record itself (no ``before``), unless chaos is asked for or
        # this torch has no _World to read the default group from
        self.fast = not chaos and world is not None
        # where the wrapper reads the default group: _World, or (not ``fast``) a stand-in whose None
        # matches no call site, so every call takes ``before``
        self.world_pgs: Any = world if self.fast else _NO_WORLD
        self.gloo = "gloo" in backend
        # (pg, op, dtype, code, line, p2p) -> (the coll line's %-format, bytes per element)
        self.formats: dict[tuple[Any, ...], tuple[str, int]] = {}
        self.done_formats: dict[tuple[str, str], str] = {}
        self.await_fmts = writer.await_fmts  # coll %-format -> its group, for the blocking GPU collectives
        self.sites: dict[int, CallSite] = {}  # id(code) + instruction offset -> ``site_entry``
        self.p2p: dict[str, int] = collections.Counter()
        self.groups: dict[int, GroupSlot | None] = {}  # id(process group) -> its slot (None: not a member)
        self._non_member = getattr(c10d.GroupMember, "NON_GROUP_MEMBER", None)
        # asynchronous works, point-to-point and blocking CPU p2p: (group, seq, t0, work) for the poller
        self.pending: collections.deque[tuple[str, int, float, Any]] = collections.deque(maxlen=pending_max)
        self.left = UNLIMITED  # calls this tick before the budget is spent (the poller sets it)
        self.on_spent: Callable[[], None] = _no_budget  # the poller's, when the budget is spent

    def fail(self, where: str, exc: BaseException) -> None:
        self.writer.fail(where, exc)

    def over_budget(self) -> None:
        """This tick's call budget is spent (called by a wrapper, once a tick): no count until the
        poller's next tick, which hears of it (``on_spent``)."""
        self.left = UNLIMITED
        self.on_spent()

    def default_group(self) -> Any:
        """The default process group: _World's plain attribute where this torch has it (what
        GroupMember.WORLD returns through two properties), else _get_default_group()."""
        pg = self._world._default_pg if self._world is not None else None
        return pg if pg is not None else self.c10d._get_default_group()

    def group(self, pg: Any) -> GroupSlot | None:
        """The slot of a process group, made on its first collective (bounded); None for a
        process that is not a member of it."""
        if pg is self._non_member:
            return None
        name = str(pg.group_name)
        slot = GroupSlot(pg, name, pg._get_sequence_number_for_group, self.done_format(name, "sync"))
        if len(self.groups) < 1024:
            self.groups[id(pg)] = slot
        return slot

    def before(self, op: str, p2p: bool, tensor: Any, group: Any,
               async_op: bool = False) -> tuple[GroupSlot | str, int, float, bool] | None:
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
            slot = self.group(pg)
            if slot is None:
                return None
        pgname: GroupSlot | str = slot
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
        if type(tensor) is TENSOR[0]:  # the common case: one plain tensor
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
        q = self.writer.queue
        if len(q) == q.maxlen:
            self.writer.dropped += 1  # the deque drops its oldest record to take this one
        if numel is None:
            q.append((fmt[0], t, seq))
        else:
            q.append((fmt[0], t, seq, numel, numel * fmt[1] if nbytes < 0 else nbytes))
        return None if awaits else (pgname, seq, t, cpu)

    def site_entry(self, op: str, pg: Any, tensor: Any, code: Any, lasti: int, async_op: bool) -> CallSite | None:
        """What the wrapper remembers of a call site, once its group's slot and its line format exist
        (after the first call, which ``before`` makes); None where ``before`` must run: a caller
        inside torch, a list of tensors, chaos, or a full cache."""
        if not self.fast or type(tensor) is not TENSOR[0]:
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
        entry = CallSite(code, lasti, pg, dtype, cpu, async_op, slot, fmt[0], fmt[1], TENSOR[0],
                         self.writer.queue_max)
        if len(self.sites) < FORMATS_MAX:
            self.sites[id(code) + lasti] = entry
        return entry

    def _coll_format(self, key: tuple[Any, ...], tensor: Any) -> tuple[str, int]:
        """The %-format of a call site's ``coll`` lines, and the element size of its dtype."""
        group, op, dtype, code_id, lasti, p2p, sized, awaits = key
        pgname = group.name if isinstance(group, GroupSlot) else group
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

    def after(self, token: tuple[GroupSlot | str, int, float, bool], result: Any, async_op: bool) -> None:
        if self.chaos_done:
            raise RuntimeError("ncclscope chaos in done")
        group, seq, t0, cpu = token
        work = result if async_op and hasattr(result, "is_completed") else None
        if work is None and cpu and not async_op:
            # a synchronous call on CPU tensors has completed when it returns
            now = time.time()
            if type(group) is GroupSlot:
                fmt = group.sync_fmt
                group.done = seq
            else:
                fmt = self.done_format(str(group), "sync")
            q = self.writer.queue
            if len(q) == q.maxlen:
                self.writer.dropped += 1
            q.append((fmt, now, seq, (now - t0) * 1000.0))
        else:
            # asynchronous works, point-to-point and blocking CPU p2p: the poller sees them complete
            self.pending.append((group.name if isinstance(group, GroupSlot) else group, seq, t0, work))


_ACTIVE: CallPath | None = None  # what every wrapper traces into; None until the tracer starts


def activate(path: CallPath | None) -> None:
    """The path every wrapper traces into from now on (None: none, each calls torch's function)."""
    global _ACTIVE
    _ACTIVE = path


def active() -> CallPath | None:
    return _ACTIVE


def make_wrapper(fn: Callable[..., Any], op: str, in_param: str | None, p2p: bool,
                 start: Callable[[], bool]) -> Callable[..., Any]:
    """``fn`` traced. ``start()``, called before any path is active, may make one (the tracer starts
    lazily where init_process_group was not seen) and says whether it did."""
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
        if _ACTIVE is None and not inside[0] and start():
            return wrapper(*args, **kwargs)
        return fn(*args, **kwargs)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        tr = _ACTIVE
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
            e: CallSite | None = None
            if not p2p_op:
                # the common case: one dict lookup, by the calling code and instruction, of what the
                # last call from there used (group, tensor type, dtype, device, async), checked by
                # identity (the entry holds the code, so the same code means the same instruction); a
                # miss asks ``site_entry`` (group slot, caller's code, line format), then ``before``
                pg = group if group is not None else tr.world_pgs._default_pg
                frame = getframe(1)
                code = frame.f_code
                e = tr.sites.get(id(code) + frame.f_lasti)
                if (e is None or e.code is not code or e.pg is not pg or type(tensor) is not e.tensor_type
                        or e.dtype is not tensor.dtype or e.cpu is not tensor.is_cpu or e.async_op is not async_op):
                    e = tr.site_entry(op, pg, tensor, code, frame.f_lasti, async_op)
                del frame
            if e is not None:
                slot = e.slot
                seq = slot.seqfn() + 1
                slot.enq = seq
                numel = tensor.numel()
                t = now_s()
                out = tr.writer
                q = out.queue
                if len(q) == e.queue_max:
                    out.dropped += 1  # the deque drops its oldest record to take this one
                q.append((e.fmt, t, seq, numel, numel * e.itemsize))
                if async_op:
                    token, then = (slot, seq, t, e.cpu), 2
                elif e.cpu:
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
                    q = out.queue
                    if len(q) == e.queue_max:  # type: ignore[union-attr]
                        out.dropped += 1
                    q.append((slot.sync_fmt, now, seq, (now - t) * 1000.0))
                    slot.done = seq
                else:
                    tr.after(token, result, async_op)
            except Exception as exc:  # noqa: BLE001
                tr.fail("done", exc)
        return result

    wrapper.__ncclscope_wrapped__ = True  # type: ignore[attr-defined]
    return wrapper
