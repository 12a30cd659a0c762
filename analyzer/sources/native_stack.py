"""Native (C/C++) backtraces of a stuck process, as users paste them beside a job's log: a thread parked inside NCCL.

Three shapes of a frame, innermost first within each thread:

- gdb (``gdb -p 4711``, ``thread apply all bt``): ``#3  0x00007f3a1a45c8e2 in ncclCommAbort () from
  /usr/lib/libnccl.so.2``, or with symbols ``#2  commReclaim (comm=0x5633f0a1c2d0) at init.cc:1897``; threads headed
  ``Thread 17 (Thread 0x7f3a... (LWP 4728) "python"):``.
- lldb (``lldb -p 4711``, ``thread backtrace all``): ``frame #3: 0x00007f3a1a45c8e2 libnccl.so.2`ncclCommAbort +
  434``; threads headed ``thread #17, name = 'python', stop reason = signal SIGSTOP``.
- py-spy with ``--native``: ``    ncclCommAbort (libnccl.so.2)`` (no line number) among its Python frames.

A thread one of whose frames is NCCL's (or PyTorch's NCCL backend's) teardown, init, wait for a collective's work or
connection set-up is parked there: a stall the text shows (``FrameworkStall``, ``what`` ``native_teardown`` /
``native_init`` / ``native_collective`` / ``native_launch`` / ``native_connect``, ``framework`` the debugger). NCCL's own helper threads
(``ncclProxyService``, ``ncclProxyProgress``, the watchdog's loop) sit in every live process and say nothing. A
backtrace of a process that died (gdb's ``Program terminated with signal SIGSEGV``, lldb's ``stop reason = signal
SIGSEGV`` / ``EXC_BAD_ACCESS``) is a crash's, not a stall: no record from that file after it. One record per thread.
"""
from __future__ import annotations

import re

from .records import FrameworkStall

GDB_FRAME_RE = re.compile(r"^#\d{1,4}\s{1,4}(?:0x[0-9a-fA-F]{1,16} in )?(?P<func>[A-Za-z_~][^\s(]{0,300}(?:\(\))?)"
                          r"(?:\s?\(|\s+from\s)")
LLDB_FRAME_RE = re.compile(r"^\*?\s{0,8}frame #\d{1,4}: 0x[0-9a-fA-F]{1,16} [^`\s]{1,200}`(?P<func>[A-Za-z_~][^\s(]{0,300})")
PYSPY_NATIVE_RE = re.compile(r"^\s{2,12}(?P<func>[A-Za-z_~][\w:~<>]{0,300}) \((?P<where>[\w.+-]{1,120}\.so(?:\.[\d.]+)?"
                             r"|[\w./+-]{1,300}\.(?:cc|cpp|cu|c|h):\d{1,7})\)\s*$")
THREAD_RE = re.compile(r"^(?:\*\s{0,4})?(?:Thread \d{1,10} \(|thread #\d{1,6}\b|Thread (?:0x[0-9a-fA-F]{1,16}|\d{1,10}) "
                       r"\((?:idle|active|gil))")
FATAL_RE = re.compile(r"Program terminated with signal SIG(?!STOP|INT|TRAP)|stop reason = (?:signal SIG(?:SEGV|ABRT|BUS|FPE|"
                      r"ILL)|EXC_BAD_ACCESS)")
GATE = ("#", "frame #", "(lib", ".so", "Thread ", "thread #", "Program terminated", "stop reason")

# the functions a thread is parked in, as the frames name them (arguments and templates stripped), by what they do
STATIONS = {
    "teardown": frozenset({
        "ncclCommAbort", "ncclCommDestroy", "ncclCommFinalize", "commReclaim", "commDestroySync", "commCleanup",
        "c10d::ProcessGroupNCCL::abort", "c10d::ProcessGroupNCCL::abortComms", "c10d::ProcessGroupNCCL::shutdown",
        "c10d::ProcessGroupNCCL::~ProcessGroupNCCL", "c10d::NCCLComm::abort", "c10d::NCCLComm::finalize",
        "c10d::NCCLComm::destroy"}),
    "init": frozenset({
        "ncclCommInitRank", "ncclCommInitRankConfig", "ncclCommInitAll", "ncclCommInitRankScalable", "ncclCommSplit",
        "ncclCommInitRankFunc", "initTransportsRank", "bootstrapInit", "bootstrapAllGather", "bootstrapSplit"}),
    "collective": frozenset({  # the host waiting for a collective's work to finish (``work.wait()``, a barrier)
        "c10d::ProcessGroupNCCL::WorkNCCL::wait", "c10d::ProcessGroupNCCL::WorkNCCL::synchronize",
        "c10d::ProcessGroupNCCL::WorkNCCL::synchronizeInternal", "c10d::ProcessGroupNCCL::WorkNCCL::synchronizeStream",
        "ncclStrongStreamSynchronize",
        # the end of a batch of sends, receives or collectives (``batch_isend_irecv``, the coalescing manager): its
        # ncclGroupEnd launches them all and, with a peer that never posts its side, never returns (nor is its work
        # handed to the watchdog: no timeout follows)
        "c10d::ProcessGroupNCCL::endCoalescing", "c10d::ProcessGroupNCCL::groupEnd"}),
    # a collective's kernel launch that does not return (a launch that blocks until its kernel ends, as under
    # CUDA_LAUNCH_BLOCKING=1, while the network work the kernel waits on goes to the proxy only after the launch)
    # (not ncclGroupEndInternal: init, split, destroy and abort run through it too)
    "launch": frozenset({"ncclLaunchKernel", "ncclStrongStreamLaunchKernel"}),
    "connect": frozenset({
        "ncclTransportP2pSetup", "ncclTransportRingConnect", "ncclTransportTreeConnect", "ncclProxyConnect",
        "ncclProxyCallBlocking", "ncclProxyCallBlockingUDS"}),
}


def station_of(func: str) -> str | None:
    """What NCCL does in the frame's function (``teardown``, ``init``, ``collective``, ``launch``, ``connect``), or None for any other function.
    ``func`` as a debugger writes it: ``ncclCommAbort``, ``commReclaim(ncclComm*)``, ``c10d::NCCLComm::abort()``."""
    name = func.split("(", 1)[0].strip()
    name = re.sub(r"<[^<>]{0,200}>", "", name)  # template arguments
    for station, names in STATIONS.items():
        if name in names:
            return station
    return None


class NativeStackReader:
    """Feeds on a log's lines (``read``): the stall record of each thread parked inside NCCL."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.fatal = False  # the file shows a process that died: its backtraces are a crash's
        self.thread = 0  # the line of the current thread's header (0: none seen yet)
        self.told = -1  # the thread that already gave its record

    def read(self, lineno: int, text: str, body: str, rank: int | None) -> FrameworkStall | None:
        if self.fatal or not any(w in body for w in GATE):
            return None
        stripped = body.strip()
        if FATAL_RE.search(stripped):
            self.fatal = True
            return None
        if THREAD_RE.match(stripped):
            self.thread = lineno
            return None
        m = GDB_FRAME_RE.match(stripped)
        tool = "gdb"
        if m is None:
            m, tool = LLDB_FRAME_RE.match(stripped), "lldb"
        if m is None:
            m, tool = PYSPY_NATIVE_RE.match(body.rstrip()), "py-spy"
        if m is None or self.told == self.thread:
            return None
        station = station_of(m.group("func"))
        if station is None:
            return None
        self.told = self.thread
        return FrameworkStall(self.file, lineno, text, rank, None, None, None, tool, f"native_{station}", None, None)
