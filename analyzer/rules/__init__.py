"""The rules that judge a job: hang, desync, crash and its root cause, and the stall time.

One definition of each, pure (no I/O, no clock: the time is passed in). ``analyze`` calls them on
a finished run (``detectors/``, ``verdict.py``); ``watch`` and the monitor inside ``ncclscope run``
call them on the run so far, fed incrementally (``live/stall.py``, ``live/monitor.py``). The
same facts give the same answer.

The stall time (how long without progress is a hang; documented for users in docs/live.md):

- Progress of a rank: its enqueued or completed sequence number of any process group moved
  (or its optimizer ``step`` did), at the record's time ``t``.
- The rhythm: gaps between consecutive completions of each rank, pooled, last 512.
- Threshold: ``stall_seconds`` when given; otherwise ``max(5 s, 3 x p99(gaps))``, capped at
  300 s. Start-up: until every rank has completed a collective it is 30 s; while fewer than 20
  gaps are known the largest gap stands in for the p99 (capped at 30 s).

Hang (``hang.stuck_collective``): in a process group, the first collective N not completed on
every member (``N = min(completed) + 1``) was enqueued by at least one; the members whose last
enqueued < N never joined: they are the culprits (none: every rank joined, NCCL or network
side). Live it needs no progress for longer than the threshold; offline, a stall signal
(watchdog timeout or failure, dump signal, heartbeat monitor, the hook's stall record, PyTorch's desync
report, a monitored barrier that timed out: ``facts.STALL_KINDS``). A pause where every rank stops with
nothing pending is never a hang. Ranks claimed by a ``world`` but never seen count only as far
as what was seen bounds them (``hang.bounded_world``).

Desync (``desync.odd_ranks``): the ranks outside a strict majority; with no majority (two ranks,
a tie), the one side whose call (its call site when every side has one, else op/count/dtype) no
rank outside it ever made, while every other side's call was made by ranks outside it; else none.
PyTorch's DETAIL reports where every side printed its own fingerprint of one call (the same op and
SequenceNumber, another shape or dtype) name nobody: each side sees the other as the odd one
(``desync.detail_verdict``).

Root cause (``cause.root_cause``): failure events and symptoms on one time line (the records'
times; file order, torchrun's "first observed failure" first, where none is known); the earliest
cause explains the symptoms after it. Causes: an exception, an OOM (MemoryError, CUDA out of
memory), a CUDA error, an NCCL error, a process that ended itself with a non-zero code or a
fatal signal, a rank that vanished (no exit record, silent before the others failed). Echoes:
timeouts, "connection closed / reset by peer", "remote process exited", processes the launcher
or the user stopped (SIGTERM, SIGKILL the launcher sent, SIGINT, KeyboardInterrupt), a SIGABRT
after that rank's own timeout, an exit code after the rank's own echo (``cause.explain``). An
interrupt or a kill after a stall is not a crash: the stall is the verdict. A mismatch one of
whose sides is only ranks that failed of their own within 10 s after it is the failure's echo,
not a desync (``cause.mismatch_is_echo``). A backend's own mismatch report (gloo's ``EnforceNotMet ...
Is there a distributed collective mismatch``, NCCL's ``Mismatched collective detected``, PyTorch's DETAIL
``Detected mismatch between collectives``) is a symptom, not a cause: the SIGABRT of the rank that
printed it is its echo (``cause.explain_mismatch``; a line with no rank goes to the one rank that
aborted), and when it comes first the verdict is desync, at the collective after the last one any
member completed (``desync.mismatch_collective``), its culprits those of the ranks' last recorded
calls (``desync.last_call_culprits``: a majority, else the novel call; one call, nobody).
A fatal GPU fault the kernel logged (an Xid the knowledge base calls critical, a GPU fallen off the bus) comes
first whatever its place in the text, and names no rank; so does a failure the knowledge base calls NCCL's own
bug, whichever rank's process it hit (``cause.lone_nccl_error``). Nodes that load different NCCL releases or
network plugins explain the incident after them: a config error (``environment``). Stack dumps and the program's
prints of who waits name a hang's culprits, or a desync's odd ranks (``stacks``).

Flight Recorder dumps alone (``fr_hang``, ``fr_desync``, over ``model_build.fr_job``): per process
group the first collective some member waits in and none completed; its culprits the members that never
issued it, else those on which it is still scheduled where others started (timing on), else members whose
dump is missing (no more than those seen). The cause is the first group that lost a rank: a rank held in
another pending collective is not lost there, the wait-for chain is followed (a send/recv chain, paired
by peer, blames its head); the others are its echoes. Sure: confirmed with a stall or the dumps' own
proof of a timeout, likely for PyTorch's own dumps, possible for dumps taken on request; every rank
inside one that never completed is a hang only in PyTorch's own dumps or with a stall. A mismatch in
any field (each coalesced member, each call against its op and group size) blames the rank whose own
call is wrong, else the odd ranks out; never the order of the files.

A connection that failed while NCCL started (a connect refused or aborted before the rank finished any init,
``startup``) is a network failure of that rank; every rank failing alike names nobody, and a rank's exit after its
own network failure is that failure (``cause.explain_exits``), wherever the launcher saw it first. A return chain
with no WARN before it that reaches NCCL's API is that call's failure (``chain.orphan_chains``). A rank whose lines
stop with no end of its own, while every failure of the others is a peer gone, is the lost peer: a crash, likely,
named by the silence or by the address the reports give (``lost_peer``). A framework's word that a start failed
(a worker "died", a start "timed out") after an init that never completed is the init hang's echo (``init_echo``).
The Flight Recorder analyser's own text report is trusted: a size, type or dtype mismatch it names is a desync,
ranks it finds missing are a hang's culprits (``fr_report``). A run that works over a slower transport than the
hardware offers (sockets between nodes with an RDMA fabric, shared memory between GPUs with NVLink) is degraded,
likely or possible as the signs go (``transport_fit``).

Rank states (``states.rank_states``) are decided here too. How sure a verdict is comes with the
finding that made it (``data["certainty"]``, e.g. NCCL call counts behind a unanimous majority:
likely, ``hang.behind_by_counts``) and defaults to confirmed in ``verdict.decide``.
"""
from __future__ import annotations

from . import healthy, lost_peer, shown
from .cause import Cause, Failure, mismatch_is_echo, root_cause
from .desync import Side, odd_ranks
from .exits import ExitClass, FailureKind, exit_class, failure_kind, is_echo_text
from .hang import bounded_world, stuck_collective
from .stall import p99, threshold

__all__ = ["Cause", "healthy", "lost_peer", "shown", "ExitClass", "Failure", "FailureKind", "Side", "bounded_world", "exit_class",
           "failure_kind", "is_echo_text", "mismatch_is_echo", "odd_ranks", "p99", "root_cause", "stuck_collective", "threshold"]
