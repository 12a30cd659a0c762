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

The parts: ``calls`` (the hot path: the wrapper and ``CallPath``, on the training thread), ``poller``
(``Poller``, the ``ncclscope-ticker`` thread), ``writer`` (``Writer``, the records' deques and the
``ncclscope-writer`` thread). This module reads the settings, makes and joins the three
(``Tracer``), and patches ``torch.distributed``.
"""
from __future__ import annotations

import atexit
import functools
import os
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType, TracebackType
from typing import Any, NoReturn

from . import calls as C
from . import records as R
from .budget import WRAPPERS
from .calls import TENSOR, CallPath
from .chaos import CHAOS_POINTS, Chaos  # noqa: F401 - CHAOS_POINTS: the names NCCLSCOPE_HOOK_CHAOS takes
from .poller import CONTROL_MAX, Poller, read_control  # noqa: F401 - read_control, CONTROL_MAX: tests use them here
from .writer import Writer

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

_TRACER: Tracer | None = None
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


class Tracer:
    """One per training process, created once a process group exists: the settings, the three parts
    (``calls``, ``poller``, ``writer``) and the process's start and end records."""

    def __init__(self, run_dir: Path, dist: ModuleType) -> None:
        self.dist = dist
        world = getattr(dist.distributed_c10d, "_world", None)
        world = world if world is not None and hasattr(world, "_default_pg") else None
        import torch

        TENSOR[0] = torch.Tensor
        self.run_dir = run_dir
        self.rank = int(dist.get_rank())
        self.world = int(dist.get_world_size())
        self.backend = str(dist.get_backend())
        self.path = run_dir / f"ncclscope-rank{self.rank}.jsonl"
        hb_s = max(0.05, _env_float("NCCLSCOPE_HOOK_HB_S", 1.0))
        self.chaos = Chaos(os.environ.get("NCCLSCOPE_HOOK_CHAOS", ""))
        # the writer's deques: append is one C call, no lock and no wake-up of the writer (which polls)
        self.writer = Writer(self.rank, self.path, max(100, _env_int("NCCLSCOPE_HOOK_QUEUE", 20000)),
                             max(100.0, _env_float("NCCLSCOPE_HOOK_RECORDS_S", 2000.0)), self.chaos, {})
        self.calls = CallPath(dist.distributed_c10d, world, self.rank, self.backend, self.writer, self.chaos,
                              max(16, _env_int("NCCLSCOPE_HOOK_PENDING", 4096)))
        calls_s = max(0, _env_int("NCCLSCOPE_HOOK_CALLS_S", 500))
        self.poller = Poller(
            self.calls, self.writer, run_dir, self.rank, self.backend, self.chaos, hb_s=hb_s,
            poll_s=max(0.01, min(hb_s, _env_float("NCCLSCOPE_HOOK_POLL_S", 0.1))),
            stall_s=max(0.1, _env_float("NCCLSCOPE_HOOK_STALL_S", 3.0)),
            fr_s=max(hb_s, _env_float("NCCLSCOPE_HOOK_FR_S", hb_s)), calls_s=calls_s,
            # NCCL only: gloo's Flight Recorder can leave ``last_completed`` a few behind for good (its
            # worker threads retire works out of order), which would read as a collective never done
            budget_on=bool(calls_s) and ("gloo" not in self.backend or os.environ.get("NCCLSCOPE_HOOK_BUDGET_GLOO") == "1"))
        self.writer.on_written = self.poller.await_done
        self._opt_id: int | None = None
        self._step_handle: Any = None
        self.exit_code: int | None = None
        self.exc: tuple[type[BaseException], BaseException, TracebackType | None] | None = None
        self._finished = False

    # settings some callers tune on a running tracer (benchmarks/hook_overhead.py): the part's own
    calls_s = property(lambda self: self.poller.calls_s, lambda self, v: setattr(self.poller, "calls_s", v))
    poll_s = property(lambda self: self.poller.poll_s, lambda self, v: setattr(self.poller, "poll_s", v))
    write_s = property(lambda self: self.writer.write_s, lambda self, v: setattr(self.writer, "write_s", v))
    dropped = property(lambda self: self.writer.dropped)
    flushed = property(lambda self: self.writer.flushed)

    def fail(self, where: str, exc: BaseException) -> None:
        """The hook's own trouble: an ``error`` record (at most 5 per place), never an exception."""
        self.writer.fail(where, exc)

    def start(self) -> None:
        self.writer.start()
        try:
            self.writer.put(self._start_record())
            self.chaos.check("start")
        except Exception as e:  # noqa: BLE001
            self.fail("start", e)
        try:
            # the default group is known from the start, so the heartbeat counts what C++ issues
            # on it (DDP's buckets) by its sequence number, before any Python collective
            self.calls.group(self.calls.default_group())
        except Exception as e:  # noqa: BLE001
            self.fail("start", e)
        try:
            import torch.optim.optimizer as optim_mod

            self._step_handle = optim_mod.register_optimizer_step_post_hook(self._on_step)
        except Exception as e:  # noqa: BLE001
            self.fail("step", e)
        self.poller.start()

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
                self.poller.step = (self.poller.step or 0) + 1
            self.chaos.check("step")
        except Exception as e:  # noqa: BLE001
            self.fail("step", e)

    def finish(self) -> None:
        """At interpreter exit: a last heartbeat, the exit record, then drain the queue (bounded wait)."""
        if self._finished:
            return
        self._finished = True
        poller, writer = self.poller, self.writer
        poller.stop(timeout=1.0)
        try:
            poller.budget_tick()  # the wrappers back in, the calls made without them counted
        except Exception as e:  # noqa: BLE001
            self.fail("budget", e)
        # one more batch written, so the last blocking GPU collectives await their done lines
        writer.flushed.clear()
        if writer.thread.is_alive():
            writer.flushed.wait(timeout=2 * writer.write_s + 0.5)
        try:
            self.chaos.check("exit")
            poller.poll()
            poller.heartbeat(fresh_fr=True)
        except Exception as e:  # noqa: BLE001
            self.fail("exit", e)
        try:
            # the whole Flight Recorder ring (DDP's C++ collectives included, with their enqueue times):
            # what straggler and desync analysis need after a run that ended normally
            if os.environ.get("NCCLSCOPE_FR_AT_EXIT", "1") != "0":
                poller.dump_fr("fr_end", stacks=False)
        except Exception as e:  # noqa: BLE001
            self.fail("exit_fr", e)
        try:
            self._exit_records()
        except Exception as e:  # noqa: BLE001
            self.fail("exit", e)
        try:
            if self._step_handle is not None:
                self._step_handle.remove()
        except Exception:  # noqa: BLE001, S110
            pass
        writer.stop(timeout=2.0)

    def _exit_records(self) -> None:
        """The exception the process ended with (its stack), if any, and the exit record."""
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
            self.writer.put(R.stack(self.rank, "exit", R.where_of(frames), R.trim(frames), exception=exc_text[:500]))
        code = self.exit_code if self.exit_code is not None else (1 if self.exc is not None else 0)
        self.writer.put(R.exit_(self.rank, code, exc_text))


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
        C.activate(tracer.calls)  # the wrappers trace from here on
        _TRACER = tracer
        tracer.start()
        atexit.register(_at_exit)
    except Exception as e:  # noqa: BLE001
        _TRACER = None
        C.activate(None)
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


def _start_if_armed() -> bool:
    """A wrapper's call before the tracer exists: start it now if the hook is armed; whether it runs."""
    if not _ARMED:
        return False
    _maybe_start()
    return C.active() is not None


def _wrap(fn: Callable[..., Any], op: str, in_param: str | None, p2p: bool) -> Callable[..., Any]:
    """``fn`` traced (``calls.make_wrapper``), starting the tracer on its first call if need be."""
    return C.make_wrapper(fn, op, in_param, p2p, _start_if_armed)


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
    C.activate(None)
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
