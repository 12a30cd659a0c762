"""Typed records that the source parsers yield. Every record knows its (file, line).

Records for NCCL lines also carry the process that wrote them (host, pid, tid) and the
timestamp when NCCL printed one (``NCCL_DEBUG_TIMESTAMP_*``, 2.26+), as seconds since epoch.
"""
from __future__ import annotations

import enum
import operator
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

from ..model import EventKind

_FIELDS: dict[type, Callable[[Any], tuple[Any, ...]]] = {}  # per class: its field values as a tuple, in C


@dataclass(slots=True)
class Rec:
    file: str
    line: int
    text: str

    def __reduce__(self) -> tuple[type, tuple[Any, ...]]:
        """Pickled as (class, field values): parse workers send tens of thousands of records to the
        parent, and the default for slots classes (a dict per object, set back attribute by
        attribute) costs twice as much each way."""
        cls = type(self)
        get = _FIELDS.get(cls)
        if get is None:
            names = [f.name for f in fields(self)]
            getter = operator.attrgetter(*names)
            get = _FIELDS[cls] = getter if len(names) > 1 else (lambda r: (getter(r),))
        return cls, get(self)


@dataclass(slots=True)
class NcclRec(Rec):
    host: str
    pid: int
    tid: int
    ts: float | None


@dataclass(slots=True)
class NcclVersion(NcclRec):
    version: str
    cuda: str | None


@dataclass(slots=True)
class NcclInit(NcclRec):
    phase: str  # START | COMPLETE | Destroy COMPLETE | Abort COMPLETE | Abort START ...
    caller: str | None
    comm: str
    rank: int
    nranks: int
    cuda_dev: int | None
    bus_id: str | None
    comm_id: str | None
    parent: str | None
    split_count: int | None
    color: int | None
    key: int | None


@dataclass(slots=True)
class NcclCommInfo(NcclRec):
    comm: str
    rank: int
    nranks: int
    nnodes: int
    local_ranks: int
    local_rank: int


@dataclass(slots=True)
class NcclEnv(NcclRec):
    name: str
    value: str


@dataclass(slots=True)
class NcclNet(NcclRec):
    kind: str  # network | ib | socket | plugin | speed_guess | no_ib
    value: str


@dataclass(slots=True)
class NcclServiceClosed(NcclNet):
    """``[Service thread] Connection closed by localRank N``: this process's proxy service thread saw the connection
    of local rank N (-1: a connection of no local rank) close, as that process exits or tears its communicator down
    (``kind`` "service_closed", ``value`` N as printed). It shows the process and its host (often the only line of a
    node left in a pasted log) and that processes were ending."""

    local_rank: int


@dataclass(slots=True)
class NcclRingOrder(NcclRec):
    channel: int
    nchannels: int
    ranks: list[int]
    truncated: bool


@dataclass(slots=True)
class NcclRing(NcclRec):
    channel: int
    prev: int
    rank: int
    next: int


@dataclass(slots=True)
class NcclTrees(NcclRec):
    """``Trees [c] d0/d1/d2->rank->up`` for every channel of one rank."""

    rank: int
    channels: list[tuple[int, tuple[int, int, int], int]]  # (channel, downs, up)


@dataclass(slots=True)
class NcclTree(NcclRec):
    channel: int
    up: int
    rank: int
    downs: tuple[int, ...]


@dataclass(slots=True)
class NcclConnection(NcclRec):
    channel: int
    conn_index: int
    src: int
    dst: int
    direction: str | None  # send | receive | None
    transport: str  # as modelled: P2P/CUMEM, SHM, NET/IB, NET/Socket, COLLNET/... (the NIC and flags cut off)
    gdr: bool = False  # a network channel printed with /GDRDMA (GPU Direct RDMA in use on it)


@dataclass(slots=True)
class NcclTopologyRun(NcclRec):
    """Consecutive ring and channel-connection lines of one printing thread, as one record (``sources.fold``):
    the head fields are those of the run's first line, each line after it kept as its values alone. A rank
    prints about 36 of these lines at each communicator's init, so at thousands of ranks they were most of
    the records a parse sends its parent; a tuple costs a tenth of a record to pickle and to load."""

    rings: list[tuple[int, int, int, int]]  # NcclRing's (channel, prev, rank, next), in line order
    conns: list[tuple[int, int, int, int, str | None, str, bool]]  # NcclConnection's fields from channel on
    last_line: int  # the run's last line


@dataclass(slots=True)
class NcclPattern(NcclRec):
    pattern: int
    nchannels: int
    bw_intra: float
    bw_inter: float
    type_intra: str
    type_inter: str


@dataclass(slots=True)
class NcclChannels(NcclRec):
    coll: int
    p2p: int


@dataclass(slots=True)
class NcclTuning(NcclRec):
    op: str | None
    nbytes: int
    algo: str
    proto: str


@dataclass(slots=True)
class NcclInitTimings(NcclNet):
    """2.23+'s ``Init timings - ncclCommInitRank: rank 0 nranks 8 total 2.45 (kernels 0.21, ...)``, printed right
    after a communicator's Init COMPLETE: how long its init took on that rank (``kind`` "init_timings", ``value`` the
    message as printed; an event of the run like the network lines)."""

    rank: int
    nranks: int
    total: float
    parts: dict[str, float]


@dataclass(slots=True)
class NcclLaunch(NcclNet):
    """A collective launched: 2.3-2.8's ``Launch mode Parallel`` / ``Launch mode Group/CGMD`` (printed at the first
    kernel launch of a process, not at init), NCCL_DEBUG=TRACE's ``NCCL CALL ncclAllReduce(...)`` (an application
    call of a collective or point-to-point). ``kind`` "launch", ``value`` the mode or the call's name."""


@dataclass(slots=True)
class NcclColl(NcclRec):
    op: str  # canonical (allreduce, ...)
    nccl_op: str  # as printed (AllReduce)
    opcount: int
    count: int
    datatype: int
    redop: int
    root: int
    comm: str
    nranks: int


@dataclass(slots=True)
class NcclWarn(NcclRec):
    source: str | None  # file:line in NCCL's tree
    func: str | None
    message: str


@dataclass(slots=True)
class NcclBacktrace(NcclRec):
    source: str
    code: int


@dataclass(slots=True)
class NcclConnected(NcclRec):
    what: str  # rings | trees | NVLS tree | ...


@dataclass(slots=True)
class NcclRasLine(NcclRec):
    message: str


# --- PyTorch / torchrun -------------------------------------------------------------------


@dataclass(slots=True)
class TorchRec(Rec):
    rank: int | None  # from "[rankN]:" or "[Rank N]" / "[PG ... Rank N]"
    severity: str | None  # E W I F
    ts_text: str | None
    pg: str | None  # process group id when the line names one


@dataclass(slots=True)
class WatchdogTimeout(TorchRec):
    seq: int | None  # None: torch before 1.11 printed ``WorkNCCL(OpType=..., Timeout(ms)=...)`` with no sequence number
    op: str
    numel_in: int | None
    numel_out: int | None
    timeout_ms: int
    ran_ms: int | None


@dataclass(slots=True)
class WatchdogFailure(TorchRec):
    """``failure detected by watchdog at work sequence id: N PG status: last enqueued ...``"""

    seq: int | None
    last_enqueued: int | None
    last_completed: int | None
    last_started: int | None = None


@dataclass(slots=True)
class DumpSignal(TorchRec):
    from_rank: int | None
    last_enqueued: int | None
    last_completed: int | None


@dataclass(slots=True)
class DesyncReport(TorchRec):
    lagging_ranks: list[int]
    seq: int | None
    op: str | None


@dataclass(slots=True)
class CollectiveMismatch(TorchRec):
    """``Detected mismatch between collectives on ranks`` (TORCH_DISTRIBUTED_DEBUG=DETAIL). ``seqs``: each
    fingerprint's ``SequenceNumber=N`` (None where torch < 1.13 printed none), in the order of ``ranks``;
    ``seq``: the reporting rank's own, the collective it stopped at (the first rank named is the one that
    printed the line: torch writes ``Rank <self> is running collective: ..., but Rank <peer> is running ...``;
    a peer's print can be cut short, ``SequenceNumber=13OpType=ALLREDUCE``)."""

    ranks: list[int]
    fingerprints: list[str]
    seqs: list[int | None] = field(default_factory=list)
    seq: int | None = None


@dataclass(slots=True)
class StoreBarrierWait(TorchRec):
    """torch <= 2.0's store-based init barrier: ``Waiting in store based barrier to initialize process group for
    rank: N, key: store_based_barrier_key:K (world_size=W, worker_count=C, timeout=...)`` (``timed_out`` False) and
    ``Timed out initializing process group in store based barrier on rank: N, for key: K (world_size=W,
    worker_count=C, timeout=...)`` (True): C of the W ranks had arrived. The record's rank is N."""

    key: str
    world_size: int
    worker_count: int
    timed_out: bool


@dataclass(slots=True)
class TorchWarning(TorchRec):
    """A warning torch or CUDA prints that names a cause by itself (the knowledge base reads ``message``): torch's
    ``NVIDIA GeForce RTX 4090 with CUDA capability sm_89 is not compatible with the current PyTorch installation.``"""

    message: str


@dataclass(slots=True)
class ProgramExit(TorchRec):
    """A rank reached the end of its program: torch's exit-time warnings ``process group has NOT been destroyed
    before it is being destructed`` (2.4) and ``destroy_process_group() was not called before program exit`` (2.5+)."""


@dataclass(slots=True)
class MonitoredBarrierFailure(TorchRec):
    failed_ranks: list[int]
    timeout_ms: int | None


@dataclass(slots=True)
class HeartbeatTimeout(TorchRec):
    pass


class StoreSocket(str, enum.Enum):
    """What one of c10d's own socket / store lines says (``[c10d]``, ``[c10d - debug]``: socket.cpp, TCPStore.cpp)."""

    CONNECTING = "connecting"  # "will attempt to connect to", "has connected to", "has accepted a connection"
    CONNECT_RETRY = "connect_retry"  # "failed to connect to [h]:p (errno: 111 ...)", "TCP client failed to connect/
    # validate to host ... - retrying": the store is not reachable (yet)
    CONNECT_TIMEOUT = "connect_timeout"  # "has timed out after Ns while trying to connect to (h, p)": gave up
    BIND_FAILED = "bind_failed"  # "failed to bind to [::]:p (errno: 98 ...)", "cannot be initialized on": one address
    LISTEN_FAILED = "listen_failed"  # "failed to listen on any local network address": the store never started
    WAIT_TIMEOUT = "wait_timeout"  # a store get / wait that timed out ("wait timeout after Nms, keys: ...")
    PEER_GONE = "peer_gone"  # the store's connection reset or closed ("Connection reset by peer", "Broken pipe")
    OTHER = "other"


@dataclass(slots=True)
class C10dLine(TorchRec):
    """A line of c10d's own socket and store code (``[W socket.cpp:719] [c10d] The client socket has failed to connect
    to [node-a]:29500 (errno: 110 - Connection timed out).``): ``what`` it says and the ``peer`` (host:port) it names.
    Debug and retry lines show a rank at its rendezvous; the failures among them are also read as the rank's error."""

    what: StoreSocket
    peer: str | None = None


@dataclass(slots=True)
class DistError(TorchRec):
    """``[rankN]: torch.distributed.DistBackendError: ...`` and other exception tails."""

    exc_type: str
    message: str
    last_error: str | None = None
    frames: list[str] = field(default_factory=list)


@dataclass(slots=True)
class TorchVersionLine(TorchRec):
    torch: str | None
    nccl: str | None


@dataclass(slots=True)
class WorldSize(TorchRec):
    """A world size a launcher or wrapper printed: torchrun's ``global_world_sizes=[16, ...]``, DeepSpeed's
    ``dist_world_size=16``, Lightning's ``MEMBER: 2/16``; ``rank`` is the printing rank when it says."""

    world_size: int


@dataclass(slots=True)
class NodeCount(TorchRec):
    """The nodes a launcher says the job has: DeepSpeed's ``nnodes=2, num_local_procs=8`` and the hosts of its
    ``WORLD INFO DICT``, a serving command's ``--nnodes 2``; an excerpt of one node's log shows one host of them."""

    nnodes: int


@dataclass(slots=True)
class RankClaim(WorldSize):
    """One process's own claim of its global rank in a world (Lightning's ``initializing ddp: GLOBAL_RANK: r,
    MEMBER: m/N``): ``rank`` is the claimed rank. Two claims of one rank are two processes holding it."""


@dataclass(slots=True)
class GroupFormed(WorldSize):
    """A line that says the whole world joined the process group: Lightning's ``All distributed processes registered.
    Starting with 4 processes``, torch <= 1.13's ``Completed store-based barrier for key:... with 4 nodes``. The group
    formed, as NCCL's Init COMPLETE on every rank says where NCCL prints its lines."""


@dataclass(slots=True)
class LauncherExit(Rec):
    """torchrun's failure summary entry or its ``failed (exitcode: ...)`` line."""

    rank: int | None
    local_rank: int | None
    exitcode: int | None
    pid: int | None
    host: str | None
    time: str | None
    traceback: str | None
    root_cause: bool


@dataclass(slots=True)
class LauncherSignal(Rec):
    """``Sending process N closing signal SIGTERM``"""

    pid: int
    signal: str


# --- structured inputs ----------------------------------------------------------------------


@dataclass(slots=True)
class FrDump(Rec):
    """One Flight Recorder dump (pickle or JSON), entries normalised to plain dicts."""

    rank: int | None
    version: str | None
    comm_lib_version: str | None
    pg_config: dict[str, Any]
    pg_status: dict[str, dict[str, int | None]]
    entries: list[dict[str, Any]]
    fmt: str  # pickle | json


@dataclass(slots=True)
class CompletionRec(Rec):
    """One ``WorkInfo`` delivered to ``_register_on_completion_hook`` (corpus files)."""

    rank: int | None
    op: str
    seq: int
    t_started: float | None
    t_finished: float | None
    active_ms: float | None


@dataclass(slots=True)
class HookRec(Rec):
    """One record of ncclscope's own hook (JSONL, see analyzer/hook)."""

    type: str
    rank: int | None
    data: dict[str, Any]


@dataclass(slots=True)
class RasComm(Rec):
    """RAS view of one communicator: per-rank launched collective counts and status."""

    comm_hash: str
    status: str | None
    errors: str | None
    counts: dict[int, dict[str, int]]  # rank -> {op: count}
    launched_up_to: dict[int, int]  # rank -> max op count (text MISMATCH section)
    missing_ranks: list[int]
    nccl_version: str | None
    nranks: int | None = None  # the communicator's size (the report's table, the JSON's "size")
    # (operation, launched up to, how many ranks, the ranks the report lists) for each count the ranks differ on
    groups: list[tuple[str, int, int, tuple[int, ...]]] = field(default_factory=list)
    dead_ranks: list[int] = field(default_factory=list)  # its ranks in processes RAS considers dead
    dead_processes: int = 0  # the job's processes RAS considers dead (unreachable), whichever communicator


@dataclass(slots=True)
class TopoXml(Rec):
    kind: str  # system | graphs
    gpus: list[dict[str, Any]]
    nics: list[dict[str, Any]]
    graphs: list[dict[str, Any]]


@dataclass(slots=True)
class NcclTestsRow(Rec):
    test: str | None
    nranks: int | None
    size: int
    count: int
    dtype: str
    redop: str
    root: int
    time_us: float
    algbw: float
    busbw: float
    in_place: bool


@dataclass(slots=True)
class EnvSetting(Rec):
    name: str
    value: str


@dataclass(slots=True)
class ExitCode(Rec):
    code: int


@dataclass(slots=True)
class UnreadLines(Rec):
    """How many lines of one file look like NCCL output (an ``NCCL INFO`` / ``NCCL WARN`` head) that no
    parser understood; ``line`` / ``text`` are the first of them."""

    kind: str  # "nccl", or "pytorch" (PyTorch / launcher lines, said when none of a file's was read)
    count: int = 0

    def add(self, line: int, text: str) -> None:
        if not self.count:
            self.line, self.text = line, text[:500]
        self.count += 1


@dataclass(slots=True)
class FileEnd(Rec):
    """Where one text input ends, against its NCCL lines: ``line`` is its last line, ``last_nccl_line`` the line of
    its last NCCL record (0 for none) and ``text_after`` how many non-blank lines that no parser took follow it (the
    application's prints). A log that ends right after NCCL's init, with nothing after, may be a hang; one that goes
    on with the program's output is not. Written by ingest once per file; ``text`` is the last line's."""

    last_nccl_line: int = 0
    text_after: int = 0


@dataclass(slots=True)
class JobCancelled(TorchRec):
    """The scheduler ended the job or one of its steps from outside: Slurm's ``slurmstepd: error: *** JOB 123 ON
    host CANCELLED AT 2024-04-20T09:09:37 DUE TO TIME LIMIT ***`` (``STEP 123.0``; ``DUE TO`` absent for an
    ``scancel``). ``reason`` is the words after ``DUE TO`` (``TIME LIMIT``, ``PREEMPTION``, ``NODE FAILURE``), or
    None."""

    scope: str  # "JOB" | "STEP"
    reason: str | None
    host: str | None = None  # the node whose slurmstepd printed it ("ON host"): a node of the job


@dataclass(slots=True)
class RankFinished(TorchRec):
    """A rank's own print that its work ended (``[rank3]: training finished``, ``Training completed for rank 6``,
    ``Process 2 - Training time: 10.04 seconds``, Lightning's ``Trainer.fit stopped: max_epochs=3 reached``): that
    rank got to its end, whatever the others did. ``rank`` is the launcher's tag or the rank the line names."""


@dataclass(slots=True)
class ProgressSeen(TorchRec):
    """The program's own progress prints of one file, summed up once at its end: training steps with a loss or a
    throughput (``Train Epoch: 1 [...] Loss: 0.41``, ``samples/sec: 41.2 | iteration 20/320000``), a test's
    ``... passed``, a server's ``Application startup complete`` and served ``200 OK`` requests. ``line`` / ``text``
    are the last of them; ``count`` how many, ``first_line`` the first; ``step_times`` the (line, seconds, the
    timing as printed) of the steps' own timings among them (``0.41 sec/step``), at most ``torch_log.MAX_STEP_TIMES``,
    evenly thinned past it."""

    count: int = 0
    first_line: int = 0
    step_times: tuple[tuple[int, float, str], ...] = ()


@dataclass(slots=True)
class LauncherSucceeded(TorchRec):
    """A launcher's word that its workers ended well: torchrun's ``[default] worker group successfully finished``
    (every worker of that agent exited 0), DeepSpeed's ``Process 4711 exits successfully``."""


@dataclass(slots=True)
class LauncherStopped(TorchRec):
    """A launcher stopped by a signal from outside, shutting its workers down: torchrun's ``Received 2 death signal,
    shutting down workers`` (``Received Signals.SIGINT death signal`` in 2.x). ``signal``: ``SIGINT``, ``SIGTERM``..."""

    signal: str


@dataclass(slots=True)
class LaunchedTasks(TorchRec):
    """How many processes a launcher command in the text starts: ``srun -N 2 --ntasks-per-node=4`` (8), ``srun -n2``,
    ``mpirun -np 2``, ``torchrun --nnodes=1 --nproc_per_node=2`` (2), an sbatch header's ``--ntasks``. ``launcher``
    names which (srun, mpirun, torchrun)."""

    count: int
    launcher: str


# --- other tools' words in a job's console: the MPI runtime, UCX / UCC, the kernel, stack dumps --------------------


@dataclass(slots=True)
class ToolEvent(TorchRec):
    """A line (or block) of another tool than NCCL and PyTorch that is one event of the run: ``event`` gives the
    event's kind and its data (``model_build.events`` takes them as they are)."""

    def event(self) -> tuple[EventKind, dict[str, Any]]:
        raise NotImplementedError


class LaunchTool(str, enum.Enum):
    """Who printed a launch or runtime failure (``LaunchFailure``)."""

    SSH = "ssh"  # the ssh the MPI launcher (or pdsh, DeepSpeed) starts its remote daemons with
    MPI = "mpi"  # Open MPI's runtime: ORTE (mpirun 1.x-4.x), PRRTE (5.x)
    UCX = "ucx"  # UCX's log (``[ts] [host:pid:thread] file.c:N UCX ERROR ...``) and Open MPI's pml_ucx
    UCC = "ucc"  # UCC's teams (``TL_SHM ERROR``, ``UCC ERROR``)


@dataclass(slots=True)
class LaunchFailure(ToolEvent):
    """The launcher's or the communication runtime's own failure, before or beside NCCL: ssh refusing the MPI
    launcher (``ssh: connect to host h port 22: Connection refused``), ORTE / PRRTE unable to start or keep its
    daemons, UCX's and UCC's shared-memory errors between processes. ``host`` / ``pid`` where the line names them."""

    tool: LaunchTool
    host: str | None
    pid: int | None
    message: str

    def event(self) -> tuple[EventKind, dict[str, Any]]:
        return LAUNCH_FAILURE_EVENT, {"tool": self.tool.value, "host": self.host, "pid": self.pid}


@dataclass(slots=True)
class GpuFault(ToolEvent):
    """The NVIDIA driver's kernel log about a GPU (dmesg, journalctl, syslog): ``NVRM: Xid (PCI:0000:3b:00): 79, pid=...,
    GPU has fallen off the bus.`` (``xid`` 79), ``NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.`` (``xid`` None).
    ``pci`` as the driver prints it; ``host`` when a syslog head names one."""

    pci: str
    xid: int | None
    host: str | None
    message: str

    def event(self) -> tuple[EventKind, dict[str, Any]]:
        return GPU_FAULT_EVENT, {"pci": self.pci, "xid": self.xid, "host": self.host}


@dataclass(slots=True)
class StackSnapshot(ToolEvent):
    """Where one process's Python main thread was when a stack dump was taken (py-spy's ``py-spy dump --pid N``,
    faulthandler's ``Thread 0x... (most recent call first)``, its ``Current thread`` first): ``collective`` is the
    torch.distributed call its innermost frames are in (``all_reduce``, ``reduce_scatter_tensor``, ``barrier``...), or
    None when it is in none; ``where`` its innermost frame of the program (``train_step (train.py:88)``); ``pid`` the
    process when the dump names it. ``rank`` is the launcher's tag of the lines, when they carry one."""

    pid: int | None
    collective: str | None
    where: str
    frames: list[str] = field(default_factory=list)

    def event(self) -> tuple[EventKind, dict[str, Any]]:
        return STACK_EVENT, {"pid": self.pid, "collective": self.collective, "where": self.where,
                             "frames": list(self.frames[:12])}


@dataclass(slots=True)
class ProgressWait(ToolEvent):
    """The program's own print that a rank waits (``rank 2 waiting for barrier``, ``[rank1] waiting for all ranks``,
    ``Rank 0: waiting on rank 3``): which rank waits, and ``on`` the rank it names as the one it waits for (None when it
    names none); ``alike`` for a call every member makes at once (its process groups' teardown, a pipeline stage's
    exchange), which says nothing of which rank the others wait for."""

    on: int | None
    alike: bool = False

    def event(self) -> tuple[EventKind, dict[str, Any]]:
        return WAIT_EVENT, {"on": self.on, "alike": self.alike}


@dataclass(slots=True)
class StallNoted(ToolEvent):
    """A poster's note in the pasted output that it stopped there (``(no further output for 40+ minutes)``, ``<hangs
    here>``, ``... stuck here forever``): the output's own end, said by whoever watched it."""

    def event(self) -> tuple[EventKind, dict[str, Any]]:
        return EventKind.STALL_NOTED, {}


@dataclass(slots=True)
class NodeRankStated(ToolEvent):
    """A launcher's word of the node it runs on: LLaMA-Factory's ``Multi-node training enabled: num nodes: 3, node rank:
    0``, DeepSpeed's ``nnodes=2, num_local_procs=4, node_rank=1``; ``machine`` the machine that printed it as the text
    shows it (the host of the shell prompt it ran under, of a launcher's host prefix, else the file)."""

    nnodes: int
    node_rank: int
    machine: str

    def event(self) -> tuple[EventKind, dict[str, Any]]:
        return EventKind.NODE_RANK_STATED, {"nnodes": self.nnodes, "node_rank": self.node_rank, "machine": self.machine}


@dataclass(slots=True)
class LaunchMisuse(ToolEvent):
    """A launcher that refused its own command line before starting anything: its argument parser's error
    (``launch.py: error: the following arguments are required: training_script``), or DeepSpeed's runner finding no
    address for a node of its hostfile (``Using IP address of  for node trn-0``: the command is built with an empty
    ``--master_addr``). ``prog`` the launcher, ``message`` what it said."""

    prog: str
    message: str

    def event(self) -> tuple[EventKind, dict[str, Any]]:
        return EventKind.LAUNCH_MISUSE, {"prog": self.prog, "message": self.message}


@dataclass(slots=True)
class LaunchSilent(ToolEvent):
    """An MPI launch whose program never printed (``sources.launch_silence``): the command's line, then nothing of the
    program before the user's interrupt, or before the text ends in the runtime's own debug lines. ``launcher`` the
    command, ``interrupted`` whether a ``^C`` ended it, ``chatter`` the runtime's own lines after it."""

    launcher: str
    interrupted: bool
    chatter: int

    def event(self) -> tuple[EventKind, dict[str, Any]]:
        return EventKind.LAUNCH_SILENT, {"launcher": self.launcher, "interrupted": self.interrupted,
                                         "chatter": self.chatter}


@dataclass(slots=True)
class HorovodStall(ToolEvent):
    """Horovod's stall inspector's warning (``One or more tensors were submitted to be reduced, gathered or broadcasted
    by subset of ranks and are waiting for remainder of ranks for more than 60 seconds``): per stalled tensor, the ranks
    the warning lists and whether they are the ones that submitted it (``ready``, the older ``[ready ranks: 0]``) or
    the ones that did not (``[missing ranks: 1]``, the newer ``Missing ranks:`` block of ``rank: [tensors]`` lines)."""

    ops: list[tuple[str, tuple[int, ...], bool]]  # (tensor, ranks, ranks are the ready ones)

    def event(self) -> tuple[EventKind, dict[str, Any]]:
        return HOROVOD_STALL_EVENT, {"ops": [[n, list(r), ready] for n, r, ready in self.ops]}


@dataclass(slots=True)
class ProgramTiming(ToolEvent):
    """A program's own print of a measured time of one collective or step (``[bench] dp_group 2 ranks [2, 10]
    allreduce avg 11.06 ms``, ``step 40 time 2.31 s``): ``what`` the operation the line names, ``ms`` the time in
    milliseconds, ``shape`` the line with every number masked (lines of one shape measure like with like)."""

    what: str
    ms: float
    shape: str

    def event(self) -> tuple[EventKind, dict[str, Any]]:
        return EventKind.PROGRAM_TIMING, {"what": self.what, "ms": self.ms, "shape": self.shape}


@dataclass(slots=True)
class RunPaces(ToolEvent):
    """The runs of one file that printed their pace (``sources.pace``), given once at its end: each a dict with its
    first line, the command that started it, its GPU count and where that came from (``gpus``, ``how``), whether a
    launcher of several processes started it (``multi``), its main loop's steps (``steps``: total, seconds a step,
    the line) and fairseq's words per second (``wps``: the median of its prints, the last line)."""

    runs: tuple[dict[str, Any], ...]

    def event(self) -> tuple[EventKind, dict[str, Any]]:
        return EventKind.RUN_PACES, {"runs": [dict(r) for r in self.runs]}


@dataclass(slots=True)
class CommSummaryRow(ToolEvent):
    """One row of DeepSpeed's comms-logger summary (``Comm. Op  Message Size  Count  Total Latency(ms)  Avg Latency(ms)
    tput_avg (Gbps)  busbw_avg (Gbps)``): the operation, its message size in bytes, how many calls, and their average
    bus bandwidth in Gb/s as DeepSpeed measured it (``sources.ds_comms``)."""

    op: str
    size: int
    count: int
    busbw_gbps: float

    def event(self) -> tuple[EventKind, dict[str, Any]]:
        return EventKind.COMM_SUMMARY, {"op": self.op, "size": self.size, "count": self.count,
                                        "busbw_gbps": self.busbw_gbps}


@dataclass(slots=True)
class FrameworkStall(ToolEvent):
    """A stall a serving or JAX framework, or the harness running it, reports itself (``sources.framework_lines``):
    ``framework`` (vllm, sglang, harness, program), ``what`` it says (``shm_broadcast_wait``, ``scheduler_watchdog``,
    ``no_progress``, ``not_entering``), ``seconds`` it waited when it says, ``culprit`` the process it names as the one
    that does not enter the collective."""

    framework: str
    what: str
    seconds: float | None
    culprit: int | None

    def event(self) -> tuple[EventKind, dict[str, Any]]:
        return FRAMEWORK_STALL_EVENT, {"framework": self.framework, "what": self.what, "seconds": self.seconds,
                                       "culprit": self.culprit}


@dataclass(slots=True)
class FrameworkBatch(ToolEvent):
    """A rank's current batch as SGLang's watchdog prints it at a timeout: its scheduler group (``dp``), the batch's
    size and its requests' ids."""

    dp: int | None
    size: int
    rids: tuple[str, ...]

    def event(self) -> tuple[EventKind, dict[str, Any]]:
        return FRAMEWORK_BATCH_EVENT, {"dp": self.dp, "size": self.size, "rids": list(self.rids)}


@dataclass(slots=True)
class BarrierEntered(ToolEvent):
    """ProcessGroupNCCL's warning as a rank starts ``barrier()`` with no device set (``Rank 1 using GPU 1 to perform
    barrier as devices used by this process are currently unknown``, torch 1.x-2.x): the rank went into the barrier,
    on ``gpu``."""

    gpu: int

    def event(self) -> tuple[EventKind, dict[str, Any]]:
        return BARRIER_ENTERED_EVENT, {"gpu": self.gpu}


@dataclass(slots=True)
class TestsTableHeader(ToolEvent):
    """nccl-tests' result table header (``#  size  count  type  redop ... time  algbw  busbw``), which the benchmark
    prints once its communicators are initialised, right before its first size runs."""

    def event(self) -> tuple[EventKind, dict[str, Any]]:
        return TESTS_TABLE_HEADER_EVENT, {}


@dataclass(slots=True)
class RankPrints(ToolEvent):
    """Where a file's prints of the program that state their rank end (``sources.rank_prints``): its last prints
    (``tail``: line, rank, shape), the ranks that printed each of their shapes anywhere in the file (``printed_by``), every
    rank that printed one (``ranks``) and how many shapes every one of them printed (``shared``)."""

    tail: tuple[tuple[int, int, str], ...]
    printed_by: dict[str, tuple[int, ...]]
    ranks: tuple[int, ...]
    shared: int
    made: tuple[tuple[int, int], ...] = ()  # (rank, its prints of the shapes every rank printed)

    def event(self) -> tuple[EventKind, dict[str, Any]]:
        return RANK_PRINTS_EVENT, {"tail": [list(t) for t in self.tail], "printed_by": {k: list(v) for k, v in
                                   self.printed_by.items()}, "ranks": list(self.ranks), "shared": self.shared,
                                   "made": [list(m) for m in self.made]}


LAUNCH_FAILURE_EVENT = EventKind.LAUNCH_FAILURE
GPU_FAULT_EVENT = EventKind.GPU_FAULT
STACK_EVENT = EventKind.STACK_SNAPSHOT
HOROVOD_STALL_EVENT = EventKind.HOROVOD_STALL
WAIT_EVENT = EventKind.PROGRESS_WAIT
FRAMEWORK_STALL_EVENT = EventKind.FRAMEWORK_STALL
FRAMEWORK_BATCH_EVENT = EventKind.FRAMEWORK_BATCH
BARRIER_ENTERED_EVENT = EventKind.BARRIER_ENTERED
TESTS_TABLE_HEADER_EVENT = EventKind.TESTS_TABLE_HEADER
RANK_PRINTS_EVENT = EventKind.RANK_PRINTS


# --- NCCL's Inspector profiler plugin (plugins/profiler/inspector) ----------------------------


class InspectorTiming(str, enum.Enum):
    """How the Inspector timed an operation (``coll_timing_source`` / ``p2p_timing_source`` / ``timing_source``)."""

    KERNEL_GPU = "kernel_gpu"  # the kernel's own GPU clock (globaltimer): what the plugin keeps by default
    KERNEL_CPU = "kernel_cpu"  # host timestamps of the kernel's channel events
    COLLECTIVE_CPU = "collective_cpu"  # host timestamps of the whole operation
    PROXY_CPU = "proxy_cpu"  # the proxy thread's callbacks (proxy records)
    UNKNOWN = "unknown"


class ProxyRecordKind(str, enum.Enum):
    """What one ``proxy_trace`` record is (``record_type``), or the older branch's ``event_type``."""

    OP = "proxy_op"  # a finished ProxyOp: one channel's transfer with one peer, totals
    STEP = "proxy_step"  # one step of a ProxyOp (flat mode), its wait phases
    OP_START = "proxy_op_start"  # nested mode: an Op seen starting
    OP_SEGMENT = "proxy_op_segment"  # nested mode: completed steps of an Op still running
    CTRL = "proxy_ctrl"  # the proxy thread's own state (older branch)


@dataclass(slots=True)
class InspectorRec(Rec):
    """A record of the Inspector's JSON output: the process (``hostname``, ``pid`` of its ``metadata``), the
    communicator (``header``: ``id`` = NCCL's commHash, its name, this process's ``rank`` in it, ``n_ranks``,
    ``nnodes``), the format version (``v4.0``...) and when the dump thread wrote it (``dump_us``, µs since epoch).
    Version 4.3's records after a ``dump_stats`` marker carry none of these: they are the marker's."""

    host: str
    pid: int
    comm: str
    comm_name: str | None
    rank: int
    nranks: int
    nnodes: int | None
    version: str | None
    dump_us: int | None


@dataclass(slots=True)
class InspectorOp(InspectorRec):
    """One completed collective (``coll_perf``) or point-to-point operation (``p2p_perf``) on one rank. ``sn`` is
    NCCL's sequence number of that operation type in the communicator (``comm->seqNumber[func]``: an AllReduce and
    an AllGather can both be #5); ``exec_us`` the kernel time (the longest channel's, by the GPU clock when
    ``timing`` says so). Verbose records (``NCCL_INSPECTOR_DUMP_VERBOSE=1``) add host timestamps, µs since epoch:
    ``start_us`` when the operation was posted, ``kernel_start_us`` / ``kernel_stop_us`` the first channel's
    start and the last channel's stop as the host saw them, ``channels`` how many channels ran it."""

    p2p: bool
    op: str  # canonical (allreduce, send, ...)
    nccl_op: str  # as written (AllReduce, Send)
    sn: int
    peer: int | None
    nbytes: int
    exec_us: float
    timing: InspectorTiming
    algbw_gbs: float | None
    busbw_gbs: float | None
    algo: str | None = None  # v4.2+: RING, TREE, NVLS...
    proto: str | None = None  # v4.2+: LL, LL128, SIMPLE
    user_tag: str | None = None  # a v4.3 branch: the application's tag, as written (a decimal string)
    start_us: int | None = None
    kernel_start_us: int | None = None
    kernel_stop_us: int | None = None
    channels: int = 0


@dataclass(slots=True)
class InspectorDumpStats(InspectorRec):
    """v4.1+'s ``dump_stats`` marker, once per communicator per dump: how many records follow and how many the
    plugin's rings overwrote before they could be written (per dump and in all); 4.3's records after it inherit its
    header and metadata. The proxy counts are None where the plugin tracks no proxy events."""

    coll_records: int
    coll_dropped_total: int
    coll_dropped_new: int
    p2p_records: int
    p2p_dropped_total: int
    p2p_dropped_new: int
    proxy_records: int | None = None
    proxy_dropped_total: int | None = None
    proxy_dropped_new: int | None = None


@dataclass(slots=True)
class InspectorProxy(InspectorRec):
    """One proxy record (``proxy_trace``; the older branch's ``proxy_op`` / ``proxy_step``): the proxy thread moving
    one channel's data to or from one ``peer`` over a network transport, for the operation ``parent`` #``parent_sn``
    (``parent_p2p``: a send/recv, else a collective). ``waits``: the phases' µs (``gpu_produce_us``,
    ``peer_credit_us``, ``wire_us`` when sending; ``wire_us``, ``flush_us``, ``gpu_consume_us`` when receiving), summed
    over the steps the record holds; ``steps`` how many step timings were read."""

    kind: ProxyRecordKind
    proxy_rank: int | None
    channel: int | None
    peer: int | None
    send: bool | None
    parent_p2p: bool | None
    parent_sn: int | None
    proxy_op_sn: int | None
    n_steps: int | None
    steps_completed: int | None
    steps_dropped: int | None
    trans_bytes: int | None
    total_us: float | None
    bw_gbs: float | None
    start_us: int | None
    stop_us: int | None
    waits: dict[str, float] = field(default_factory=dict)
    steps: int = 0


@dataclass(slots=True)
class InspectorMetric(Rec):
    """One line of the Inspector's Prometheus textfile (``nccl_inspector_metrics_<gpu>.prom``, rewritten at each
    dump): an aggregate over the last interval, ``name{labels} value`` (``nccl_collective_exec_time_microseconds``
    {node, gpu, comm_name, nranks, collective, message_size (a range), algo_proto, ...})."""

    name: str
    labels: dict[str, str]
    value: float
