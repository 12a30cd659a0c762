"""The job model: what ncclscope knows about one run, built from every parsed source.

Frozen dataclasses hold the facts that are few (hosts, processes, communicators, findings);
pandas holds what is many (one row per collective per rank, see ``COLLECTIVE_COLUMNS``).
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

# the Flight Recorder part of the model: imported here so that the cache reads its classes back too
from .fr_model import DumpOrigin, FrField, FrGroup, FrJob, FrMismatch, FrOp, FrPart, FrRank, FrSide, FrState  # noqa: F401
# NCCL's own diagnostics lines (2.31+), read: the same, for the cache
from .diag_model import DiagCheck, DiagLevel, DiagProblem, DiagResult, DiagSource  # noqa: F401

if TYPE_CHECKING:  # pandas is imported where a table is made: a cached re-open needs none
    import pandas as pd


class Severity(str, enum.Enum):
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"
    CRITICAL = "critical"

    @property
    def order(self) -> int:
        return ["info", "warning", "error", "critical"].index(self.value)


class Verdict(str, enum.Enum):
    HEALTHY = "healthy"
    DEGRADED = "degraded"
    HANG = "hang"
    DESYNC = "desync"
    CRASH = "crash"
    CONFIG_ERROR = "config_error"
    UNKNOWN = "unknown"


class RankState(str, enum.Enum):
    """What a rank was doing when the evidence ends (``rules.states``)."""

    RUNNING = "running"
    FINISHED = "finished"
    STUCK_OUTSIDE_NCCL = "stuck_outside_nccl"  # in its own code (its stack says where), others wait for it
    STUCK_IN_COLLECTIVE = "stuck_in_collective"  # enqueued a collective that never completed
    NEVER_JOINED = "never_joined"  # never issued the collective the others wait in
    MISMATCHED = "mismatched"  # a desync's odd side: it called a different collective at that sequence number
    DIED = "died"  # its process ended: exit code, signal, OOM killer
    STOPPED = "stopped"  # ended from outside (the launcher, the scheduler, the user) after something else failed
    LOCAL_NCCL_FAILURE = "local_nccl_failure"
    REMOTE_FAILURE = "remote_failure"  # a peer is gone (connection closed / reset, remote process exited)
    NETWORK_ERROR = "network_error"  # IB completion error, socket error of its own
    CUDA_ERROR = "cuda_error"
    UNKNOWN = "unknown"


class Certainty(str, enum.Enum):
    """How sure a verdict is: ``confirmed`` by the records of the ranks involved, ``likely`` from counts
    or from what the other ranks say, ``possible`` from symptoms alone."""

    CONFIRMED = "confirmed"
    LIKELY = "likely"
    POSSIBLE = "possible"


@dataclass(frozen=True, slots=True)
class Evidence:
    """One line of input that supports a finding."""

    file: str
    line: int
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "text": self.text[:500]}


@dataclass(frozen=True, slots=True)
class Stuck:
    """The first collective that did not complete on every rank of its process group."""

    pg: str
    seq: int
    op: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"pg": self.pg, "seq": self.seq, "op": self.op}


class FindingKind(enum.StrEnum):
    """What a finding is about: a short stable word (``findings[].kind`` in the report)."""

    HANG = "hang"
    DESYNC = "desync"
    CRASH = "crash"
    LAUNCH = "launch"  # the command never started
    ERROR = "error"  # a failure the knowledge base explains, or a failing NCCL return chain it does not know
    NOTE = "note"  # a fact worth knowing that argues for no verdict
    CONFIG = "config"
    STRAGGLER = "straggler"
    SLOW_LINK = "slow_link"
    SLOW_STEPS = "slow_steps"  # the program's own step times slowed for a stretch
    TRANSPORT = "transport"
    HOTSPOT = "hotspot"
    INPUT = "input"  # what the input holds or lacks: missing ranks, two jobs
    INTERNAL = "internal"  # a detector failed; the others' findings stand


# What a finding holds beyond its message: ``Finding.data``, ``findings[].data`` in the report. Every key any
# code writes, none required. The first group is what code reads back (the decision, the rank states, the
# dashboard, the detectors among themselves), each with its reader; the rest are details for the report.
# (Written as a call: ``class`` is a Python keyword.)
FindingData = TypedDict("FindingData", {
    # --- read back ---------------------------------------------------------------------------------------
    # the ranks at fault when they differ from ``ranks``; [] for a finding that names ranks but blames none (the
    # setup, the network or NCCL itself failed there): verdict._from
    "culprits": list[int],
    # how sure the finding is, {"level": a ``Certainty`` word, "why": a sentence}: verdict._from takes the first
    # verdict finding's as the decision's certainty
    "certainty": dict[str, str],
    # which hang: never_joined, never_completed, process_died, no_dump (Flight Recorder), exit (a hang on the
    # way out: never the verdict's story), init, store_barrier, ...: verdict.decide, metrics.progress.states_at_stuck,
    # detectors.hang
    "class": str,
    # ranks that wait in the stuck collective for the culprits: verdict._states, metrics.progress.states_at_stuck
    "waiting": list[int],
    # rank -> its code location (a stack's top frame): metrics.progress.rank_status, the dashboard's Hang page
    "where": dict[int, str],
    # a desync's sides, each {"ranks": [...], "op": ..., and what that side called}: verdict._desync_is_echo
    "sides": list[dict[str, Any]],
    # what differs in a desync: "op", "size", "dtype", "detail" (PyTorch's DETAIL check), "nccl", "backend": verdict
    "mismatch": list[str],
    # when the mismatch was first seen (seconds since the epoch): verdict._desync_is_echo
    "t": float | None,
    # the NCCL WARN quoted, and its return chain ("file.cc:N -> code" each): verdict._survived
    "warn": str,
    "chain": list[str],
    # the NCCL_ / TORCH_ settings the finding is about: detectors.config (one finding a setting)
    "settings": list[str],
    # the knowledge-base entry (nccl/failures.toml) and its area: detectors.nccl_warn
    "entry": str | None,
    "area": str,
    # present on the input detector's findings it replaces: detectors.inputs
    "communicators": list[str],
    "missing_ranks": list[int],
    # what the nodes differ in (an NCCL version, a network plugin): the config error behind what followed, verdict
    "environment_mismatch": str,
    # --- details for the report ----------------------------------------------------------------------------
    # the knowledge-base entry's words
    "cause": str, "fix": str, "link": str, "releases": list[str], "count": int,
    "explained_by": str | None,  # the entry of the finding that explains this one
    # hang and crash
    "suspects": list[int], "finished": list[int], "source": str, "echoes": list[dict[str, Any]],
    "last_enqueued": dict[int, Any], "last_completed": dict[int, Any],
    "first_failure_rank": int | None, "exitcode": int | None, "exit_code": int | None, "signal": str | None,
    "stopped_after": list[int], "error": str,
    # desync
    "odd_ranks": list[int], "culprit_by": str | None, "reported_by": int | None, "reports": int, "fields": list[str],
    # input and launch
    "world_size": int, "claimed_by": dict[str, list[str]], "hosts": list[str], "processes": Any,
    "other_world_sizes": list[int], "ranks_per_job": int, "tasks": int, "world": int, "arrived": int,
    "launcher": str, "doubled": list[list[int]], "unclaimed": list[int], "unclaimed_count": int,
    # config
    "interfaces": list[str], "value": str,
    "values": list[list[Any]],  # an environment mismatch's values, each [value, [hosts]]
    "runs": int,  # runs one console holds (restarts): the last is judged
    # straggler, hotspots, slow links, transport
    "late_count": int, "events": int, "wait_ms_total": float, "wait_ms_median": float, "p_value": float,
    "top": list[dict[str, Any]], "small": int, "total": int,
    "bucket_bytes": int, "busbw": float, "sweep_busbw": float, "floor_gbs": float, "best_busbw": float, "path": str,
    "links": int, "link_gbs": float, "reference": str, "gdr": bool | None, "gpus": list[str], "nnodes": int | None,
    "busbw_by_size": list[list[float]], "transports": list[str],
    # two measurements of one thing in one input (detectors.slow_compare)
    "twin_busbw": float, "sizes": list[int], "gap": float, "slow_ms": float, "fast_ms": float,
    # two runs of one job on more GPUs and fewer (detectors.slow_scaling): the larger's scaling efficiency (0..1), or
    # how many times longer its same work took where no GPU count is known
    "efficiency": float, "times_slower": float,
}, total=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    kind: FindingKind
    severity: Severity
    message: str
    ranks: tuple[int, ...] = ()
    hint: str | None = None
    evidence: tuple[Evidence, ...] = ()
    stuck: Stuck | None = None
    # verdict this finding argues for, if any (hang, crash, ...); None for notes
    verdict: Verdict | None = None
    data: FindingData = field(default_factory=lambda: FindingData())
    # the verdict this finding is a symptom of (``verdict.mark_echoes``): set once the job is judged, with
    # the severity the detector gave it (an echo is shown no higher than a warning)
    echo_of: Verdict | None = None
    severity_alone: Severity | None = None

    def __post_init__(self) -> None:
        # a kind given as its word is taken as the enum member; an unknown word is a bug here
        object.__setattr__(self, "kind", FindingKind(self.kind))

    @property
    def label(self) -> str:
        """Its kind as every output names it: ``hang``, or ``hang (echo of the desync)``."""
        return f"{self.kind.value} (echo of the {self.echo_of.value.replace('_', ' ')})" if self.echo_of else self.kind.value

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind.value,
            "severity": self.severity.value,
            "ranks": list(self.ranks),
            "message": self.message,
            "hint": self.hint,
            "evidence": [e.to_json() for e in self.evidence],
            "stuck": self.stuck.to_json() if self.stuck else None,
            "echo_of": self.echo_of.value if self.echo_of else None,
            "data": _jsonable(self.data),
        }


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and value != value:  # noqa: PLR0124 - NaN
        return None
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return value.item()
    return value


@dataclass(frozen=True, slots=True)
class Process:
    """One OS process of the job (one rank, usually)."""

    host: str
    pid: int
    rank: int | None
    cuda_dev: int | None = None
    bus_id: str | None = None
    evidence: Evidence | None = None  # its first NCCL line (None for a rank known only from PyTorch's lines)


@dataclass(frozen=True, slots=True)
class Connection:
    channel: int
    src: int
    dst: int
    transport: str
    conn_index: int = 0
    gdr: bool = False  # a network channel NCCL printed with /GDRDMA: GPU Direct RDMA in use on it


@dataclass(frozen=True, slots=True)
class Communicator:
    """One NCCL communicator, joined across the processes that are its members.

    ``id`` is NCCL's commId (``comm->commHash``) or, for ``ncclCommSplit`` which prints none,
    ``<parent id>/split<count>:<color>``.
    """

    id: str
    nranks: int
    members: dict[int, int]  # comm rank -> global rank (or comm rank when unknown)
    parent: str | None = None
    color: int | None = None
    caller: str | None = None
    n_channels: int | None = None
    rings: dict[int, tuple[int, ...]] = field(default_factory=dict)  # channel -> ring order
    trees: dict[int, dict[int, int]] = field(default_factory=dict)  # channel -> {rank: parent}
    connections: tuple[Connection, ...] = ()
    init_complete: frozenset[int] = frozenset()  # comm ranks that printed Init COMPLETE
    init_started: frozenset[int] = frozenset()
    nnodes: int | None = None
    # comm rank -> the last of its Init lines (START, the comm-info line, COMPLETE) that rank printed
    init_lines: dict[int, Evidence] = field(default_factory=dict)
    # the first line that shows each transport, its rings, its trees (model_build.shown)
    transport_lines: dict[str, Evidence] = field(default_factory=dict)
    ring_line: Evidence | None = None
    tree_line: Evidence | None = None

    @property
    def transports(self) -> list[str]:
        return sorted({c.transport for c in self.connections})

    def unique_rings(self) -> list[list[int]]:
        """Each distinct ring order, in channel order of first use (a set of tuples says which were seen:
        at thousands of ranks a list compare per channel was quadratic in the channels)."""
        seen: set[tuple[int, ...]] = set()
        out: list[list[int]] = []
        for _, order in sorted(self.rings.items()):
            key = tuple(order)
            if key not in seen:
                seen.add(key)
                out.append(list(order))
        return out

    def unique_trees(self) -> list[list[list[int]]]:
        """Each distinct tree as a sorted list of [parent, child] edges, in channel order of first use."""
        seen: list[dict[int, int]] = []  # child -> parent of each tree kept: a child has one parent, so two trees
        out: list[list[list[int]]] = []  # are the same edges when these dicts are equal (a dict compare per tree kept)
        for _, parents in sorted(self.trees.items()):  # channels mostly repeat a tree: sorted once it is new
            edges = {c: p for c, p in parents.items() if p >= 0}
            if edges and not any(edges == s for s in seen):
                seen.append(edges)
                out.append([[p, c] for p, c in sorted((p, c) for c, p in edges.items())])
        return out

    def to_json(self) -> dict[str, Any]:
        ranks = sorted(self.members.values())
        return {
            "id": self.id,
            "nranks": self.nranks,
            "ranks": ranks,
            "parent": self.parent,
            "n_channels": self.n_channels,
            "transports": self.transports,
            "rings": self.unique_rings(),
            "trees": self.unique_trees(),
            "init_complete_ranks": sorted(self.members.get(r, r) for r in self.init_complete),
        }


@dataclass(frozen=True, slots=True)
class GraphSearch:
    """What NCCL's topology search computed for one graph pattern (``Pattern 4, crossNic 0, nChannels 12, bw
    30.000000/30.000000, type NVL/PIX``): its channels and the bandwidth of each inside a node and between nodes
    (GB/s). Of the lines a job prints for a pattern, the one of least capacity (channels x the lesser bandwidth)."""

    pattern: int  # NCCL's graph pattern: 1-3 trees, 4 ring, 5 NVLS, 6 CollNet
    nchannels: int
    bw_intra: float
    bw_inter: float
    evidence: Evidence

    @property
    def capacity(self) -> float:
        return self.nchannels * min(self.bw_intra, self.bw_inter)


@dataclass(frozen=True, slots=True)
class TuningChoice:
    """NCCL's algorithm and protocol for one operation at one size, from its TUNING lines (``AllReduce: 33554432
    Bytes -> Algo RING proto SIMPLE ...``): the lines of one (op, log2 size, algo, proto) counted, the first kept."""

    op: str | None  # canonical (allreduce, ...); None for the releases whose line names no operation
    bucket: int  # log2 of the bytes
    algo: str
    proto: str
    lines: int
    evidence: Evidence


@dataclass(frozen=True, slots=True)
class Setting:
    """An NCCL_/TORCH_ setting and where it was seen."""

    name: str
    value: str
    source: str  # "nccl-log" (X set by environment), "env-file", "wrapper"
    evidence: Evidence | None = None


class Format(enum.StrEnum):
    """What an input file holds, as ``ingest`` reads it (``inputs[].format`` in the report): told by its
    content (``ingest.formats.sniff``), then made precise by reading it (a JSON file is a Flight Recorder
    dump, a RAS report or an nccl-tests result), or why it was not read."""

    LOG = "log"  # NCCL, PyTorch and launcher lines
    JSONL = "jsonl"  # JSON lines: ncclscope's hook, PyTorch's completion hook
    JSON = "json"  # JSON that is none of the kinds below (not read)
    PICKLE = "pickle"  # a pickle that gave no Flight Recorder dump
    FLIGHT_RECORDER = "flight_recorder"  # a Flight Recorder dump (pickle or JSON)
    RAS = "ras"  # NCCL RAS report (text or JSON)
    NCCL_TESTS = "nccl_tests"  # nccl-tests output (text or JSON)
    PERF_JSON = "perf_json"  # ``ncclscope perf``'s JSON (its perf.txt is read as nccl-tests)
    INSPECTOR = "inspector"  # NCCL's Inspector profiler plugin: JSON lines of per-collective kernel times
    INSPECTOR_PROM = "inspector_prom"  # the Inspector's Prometheus textfile (aggregates of the last interval)
    XML = "xml"  # NCCL topology dump
    ENV = "env"  # NAME=value lines
    EMPTY = "empty"
    BINARY = "binary"  # not a log, dump or table
    REFUSED = "refused"  # a pickle that would run code
    UNREADABLE = "unreadable"  # could not be opened or read
    SKIPPED = "skipped"  # not a regular file (a link, a FIFO), or a folder that could not be read


class Origin(enum.StrEnum):
    """Who wrote an input file, told once by its name where ``ingest`` opens it (``ingest.formats.origin_of``)."""

    INPUT = "input"  # the job's own logs, dumps and tables
    RUN = "run"  # a file of a folder that ``ncclscope run`` made (``ncclscope-runs/<date>/stdout.log``)
    HOOK = "hook"  # ncclscope's in-process hook (``ncclscope-rank<N>.jsonl``)


@dataclass(frozen=True, slots=True)
class ExitRecord:
    """How a process ended, as the launcher reported it."""

    rank: int | None
    exitcode: int | None
    pid: int | None = None
    host: str | None = None
    signal: str | None = None
    root_cause: bool = False
    time: str | None = None
    evidence: Evidence | None = None
    origin: Origin = Origin.INPUT  # who wrote the file it was read from: the hook's exit records are ``HOOK``


@dataclass(frozen=True, slots=True)
class Job:
    world_size: int | None
    hosts: tuple[str, ...]
    processes: tuple[Process, ...]
    nccl_version: str | None
    torch_version: str | None
    cuda_version: str | None
    settings: dict[str, Setting] = field(default_factory=dict)
    nccl_versions: dict[int, str] = field(default_factory=dict)  # pid -> version, to spot mixes
    exit_code: int | None = None
    nnodes: int | None = None  # nodes: as NCCL states them (nNodes), else the hosts seen
    world_lines: tuple[Evidence, ...] = ()  # the lines that claim ``world_size`` (an Init line, a dump, a hook record)
    version_lines: dict[str, Evidence] = field(default_factory=dict)  # NCCL version -> the first line that printed it

    def to_json(self) -> dict[str, Any]:
        return {
            "world_size": self.world_size,
            "hosts": list(self.hosts),
            "nodes": self.nnodes,
            "nccl_version": self.nccl_version,
            "torch_version": self.torch_version,
            "cuda_version": self.cuda_version,
            "exit_code": self.exit_code,
            "settings": {k: v.value for k, v in sorted(self.settings.items())},
        }


COLLECTIVE_COLUMNS = [
    "rank",  # global rank (int, -1 unknown)
    "pg",  # process group id as PyTorch names it ("0"), or NCCL comm id for NCCL-only rows
    "seq",  # collective sequence number within pg
    "op",  # canonical op name: allreduce, allgather, ...
    "count",  # elements
    "dtype",
    "bytes",
    "state",  # scheduled | started | completed | unknown
    "t_created",  # seconds since epoch, float, NaN unknown
    "t_started",
    "t_completed",
    "duration_ms",
    "source",  # fr | hook | nccl | completion_hook
    "file",
    "line",
    "where",  # code location of the call when known
]


def empty_collectives() -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame({c: pd.Series(dtype="object") for c in COLLECTIVE_COLUMNS})


@dataclass(frozen=True, slots=True)
class PgStatus:
    """A rank's view of a process group at one moment (Flight Recorder pg_status, heartbeat)."""

    rank: int
    pg: str
    last_enqueued: int | None
    last_started: int | None
    last_completed: int | None
    source: RecordSource
    ts: float | None = None
    evidence: Evidence | None = None
    # gloo's Flight Recorder: its worker threads retire works out of order, so ``last_completed`` can
    # stay a few collectives behind what completed (torch 2.13; see rules.hang.stuck_collective)
    completion_may_lag: bool = False


class EventKind(enum.StrEnum):
    """What a ``LogEvent`` is (``model_build.events`` makes every one of them; an unknown kind is a bug).
    NCCL's own lines are ``nccl_`` + what, an ``NcclNet`` record ``nccl_net_`` + its kind."""

    # NCCL's lines
    NCCL_WARN = "nccl_warn"
    NCCL_BACKTRACE = "nccl_backtrace"  # an ``file.cc:N -> code`` line of a failure's call chain
    NCCL_RAS = "nccl_ras"
    NCCL_NET_BOOTSTRAP = "nccl_net_bootstrap"
    NCCL_NET_SOCKET = "nccl_net_socket"
    NCCL_NET_INTERFACES = "nccl_net_interfaces"
    NCCL_NET_NETWORK = "nccl_net_network"
    NCCL_NET_GDR = "nccl_net_gdr"  # nccl-tests' ``via NET/IB/0/GDRDMA``
    NCCL_NET_GDR_DISABLED = "nccl_net_gdr_disabled"
    NCCL_NET_GDR_ENABLED = "nccl_net_gdr_enabled"
    NCCL_NET_NO_IB = "nccl_net_no_ib"
    NCCL_NET_NO_DEVICE = "nccl_net_no_device"
    NCCL_NET_IB = "nccl_net_ib"
    NCCL_NET_PLUGIN = "nccl_net_plugin"
    NCCL_NET_OTHER = "nccl_net_other"  # ``NET/<name> : Using ...`` of a network other than IB, Socket, a plugin
    NCCL_NET_SPEED_GUESS = "nccl_net_speed_guess"
    NCCL_NET_NVLS = "nccl_net_nvls"
    NCCL_NET_SERVICE_CLOSED = "nccl_net_service_closed"
    NCCL_NET_INIT_TIMINGS = "nccl_net_init_timings"
    NCCL_NET_LAUNCH = "nccl_net_launch"
    NCCL_UNREAD = "nccl_unread"  # lines that look like NCCL's and no parser took
    PYTORCH_UNREAD = "pytorch_unread"
    FILE_END = "file_end"
    EARLIER_RUNS = "earlier_runs"  # a log that holds several runs of the job: the last is judged
    # ncclscope's hook
    HOOK_STALL = "hook_stall"
    HOOK_ERROR = "hook_error"
    HOOK_EXIT = "hook_exit"
    HOOK_DESYNC = "hook_desync"
    # PyTorch, the launchers, the program, the scheduler
    WATCHDOG_TIMEOUT = "watchdog_timeout"
    WATCHDOG_FAILURE = "watchdog_failure"
    DUMP_SIGNAL = "dump_signal"
    DIST_ERROR = "dist_error"
    DESYNC_REPORT = "desync_report"
    COLLECTIVE_MISMATCH = "collective_mismatch"
    STORE_BARRIER_WAIT = "store_barrier_wait"
    PROGRAM_EXIT = "program_exit"
    BARRIER_FAILURE = "barrier_failure"
    HEARTBEAT_TIMEOUT = "heartbeat_timeout"
    RANK_FINISHED = "rank_finished"
    PROGRESS = "progress"
    LAUNCHER_STOPPED = "launcher_stopped"
    LAUNCHED_TASKS = "launched_tasks"
    LAUNCHER_SUCCEEDED = "launcher_succeeded"
    FR_TRACE_REPORT = "fr_trace_report"
    GPU_LINKS = "gpu_links"
    JOB_CANCELLED = "job_cancelled"
    # other tools' lines (``sources.records.ToolEvent``)
    LAUNCH_FAILURE = "launch_failure"
    GPU_FAULT = "gpu_fault"
    STACK_SNAPSHOT = "stack_snapshot"
    PROGRESS_WAIT = "progress_wait"
    FRAMEWORK_STALL = "framework_stall"  # a serving / JAX framework's own stall report
    HOROVOD_STALL = "horovod_stall"  # Horovod's stall inspector: the tensors some ranks submitted and others did not
    FRAMEWORK_BATCH = "framework_batch"  # a rank's current batch at a framework's timeout
    COMM_SUMMARY = "comm_summary"  # a row of DeepSpeed's comms-logger summary: an operation's size and bus bandwidth
    PROGRAM_TIMING = "program_timing"  # a program's own print of a collective's or step's measured time
    RUN_PACES = "run_paces"  # the runs of a console with their pace and GPU count (sources.pace)
    BARRIER_ENTERED = "barrier_entered"  # ProcessGroupNCCL's word that a rank starts a barrier on a guessed GPU
    TESTS_TABLE_HEADER = "tests_table_header"  # nccl-tests' result table header: its communicators were built
    RANK_PRINTS = "rank_prints"  # where a file's prints of the program stating their rank end, and who printed what
    # lines kept as records of their own class, named by it
    TORCH_WARNING = "TorchWarning"
    C10D_LINE = "C10dLine"
    TORCH_VERSION_LINE = "TorchVersionLine"
    WORLD_SIZE = "WorldSize"
    RUN_RESTART = "RunRestart"
    NODE_COUNT = "NodeCount"
    RANK_TAGGED = "RankTagged"
    BAR_SEEN = "BarSeen"  # the last progress bar of a file, of any work
    RANK_CLAIM = "RankClaim"
    NODE_RANK_STATED = "NodeRankStated"  # a launcher's word of the node rank it runs as
    LAUNCH_MISUSE = "LaunchMisuse"  # a launcher refusing its own command line (its argument parser, an empty address)
    STALL_NOTED = "StallNoted"  # a poster's note that the output stopped there ("(no further output for 40 minutes)")
    LAUNCH_SILENT = "LaunchSilent"  # an MPI launch whose program never printed before an interrupt (launch_silence)
    GROUP_FORMED = "GroupFormed"  # a launcher's or torch's word that every process joined the group

    @property
    def from_nccl(self) -> bool:
        """One of NCCL's own lines."""
        return self.value.startswith("nccl_")


class CollState(enum.StrEnum):
    """A collective's state in the collectives table (``COLLECTIVE_COLUMNS``' ``state``), as its source records it."""

    SCHEDULED = "scheduled"  # enqueued, its kernel not started
    ENQUEUED = "enqueued"  # enqueued; whether it started is not recorded
    STARTED = "started"
    COMPLETED = "completed"
    UNKNOWN = "unknown"


class RecordSource(enum.StrEnum):
    """Where a collectives-table row (``source``) or a ``PgStatus`` came from."""

    FR = "fr"  # a Flight Recorder dump
    HOOK = "hook"  # ncclscope's hook
    NCCL = "nccl"  # NCCL's own log lines
    COMPLETION_HOOK = "completion_hook"  # PyTorch's completion hook's JSON lines
    INSPECTOR = "inspector"  # NCCL's Inspector profiler plugin
    WATCHDOG = "watchdog"  # the watchdog's failure line (last enqueued / started / completed)
    WATCHDOG_TIMEOUT = "watchdog_timeout"  # the watchdog's timeout line alone
    DUMP_SIGNAL = "dump_signal"


@dataclass(frozen=True, slots=True)
class LogEvent:
    """A notable line: NCCL WARN, PyTorch error, traceback tail, watchdog message."""

    kind: EventKind
    rank: int | None
    text: str
    evidence: Evidence
    ts: float | None = None
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class Run:
    """Everything known about one job, ready for the detectors."""

    job: Job
    communicators: list[Communicator]
    collectives: pd.DataFrame
    pg_status: list[PgStatus]
    events: list[LogEvent]
    exits: list[ExitRecord]
    ras: list[dict[str, Any]] = field(default_factory=list)  # per comm: {rank: counts}
    stacks: dict[int, str] = field(default_factory=dict)  # rank -> where (hook stack snapshots)
    files: list[tuple[str, Format]] = field(default_factory=list)  # (file, format)
    origins: dict[str, Origin] = field(default_factory=dict)  # file -> who wrote it, for those not ``INPUT``
    problems: list[str] = field(default_factory=list)  # files refused or unreadable, said plainly
    heartbeats: pd.DataFrame | None = None
    nccl_tests: list[dict[str, Any]] = field(default_factory=list)
    killed_pids: set[int] = field(default_factory=set)  # pids the launcher sent a closing signal
    flight_recorder: FrJob | None = None  # what the Flight Recorder dumps say (model_build.fr_job)
    tuning: list[TuningChoice] = field(default_factory=list)  # NCCL's algorithm choices (model_build.shown)
    graphs: list[GraphSearch] = field(default_factory=list)  # NCCL's topology search, one per pattern (shown)
    diagnostics: list[DiagResult] = field(default_factory=list)  # NCCL DIAG lines and RAS answers (diag_model)
    # derived tables computed once per analysis and shared by detectors (never persisted)
    memo: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def timeline_summary(self) -> list[tuple[str, int, int]]:
        """(source, rows, ranks) of the collectives table, by source name."""
        df = self.collectives
        if not len(df):
            return []
        summ = df.groupby("source", observed=True, sort=False).agg(rows=("seq", "size"), ranks=("rank", "nunique"))
        return sorted((str(src), int(r.rows), int(r.ranks)) for src, r in summ.iterrows())

    def origin(self, file: str) -> Origin:
        """Who wrote the input ``file`` (told once, where ingest read it)."""
        return self.origins.get(file, Origin.INPUT)

    def from_ncclscope(self) -> bool:
        """Whether some input file is ncclscope's own: the hook's records or a file of a folder that
        ``ncclscope run`` made (else the input is the job's files alone, often a pasted excerpt)."""
        return any(o is not Origin.INPUT for o in self.origins.values())

    def ranks(self) -> list[int]:
        if self.job.world_size:
            return list(range(self.job.world_size))
        return sorted({p.rank for p in self.job.processes if p.rank is not None})
