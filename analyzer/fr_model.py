"""What a job's Flight Recorder dumps say, reduced to the points a judgement needs.

``model_build.fr_job`` builds it from the dumps (one per rank); ``rules.fr_hang`` and
``rules.fr_desync`` judge it; ``detectors`` turn the judgement into findings. Kept apart from the
dumps themselves (20,000 entries a rank) so that a run keeps and caches only this: per process
group, the first operation that did not complete on every member that takes part in it, and the
first collective whose members' calls disagree. ``model`` imports these classes, so the cache
reads them back like the rest of the model.

A process group is named as PyTorch names it (``process_group[0]`` of an entry, the key of
``pg_config``); a send/recv belongs to the ordered pair of global ranks that exchange it.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass


class FrState(enum.StrEnum):
    """A rank's part in one operation, as its own dump shows it."""

    ABSENT = "absent"  # its records reach past the point and hold no entry for it: it never issued it
    SCHEDULED = "scheduled"  # enqueued, its kernel not started (its dump records start times: timing is on)
    ENQUEUED = "enqueued"  # enqueued, not completed; whether it started is not recorded (timing off)
    STARTED = "started"
    COMPLETED = "completed"
    NO_DUMP = "no_dump"  # a member whose dump is not in the input
    UNKNOWN = "unknown"  # issued (a later entry of the group exists) or no longer in its ring buffer

    @property
    def pending(self) -> bool:
        """In the operation and not done with it: it waits there."""
        return self in (FrState.SCHEDULED, FrState.ENQUEUED, FrState.STARTED)


class DumpOrigin(enum.StrEnum):
    """Who wrote a dump, by the writers' own names for the file (``<prefix><global rank>``)."""

    WATCHDOG = "watchdog"  # PyTorch's writer, on a timeout or an error (TORCH_FR_DUMP_TEMP_FILE, its defaults)
    REQUEST = "request"  # taken on request of a running job (ncclscope's live dumps)
    EXIT = "exit"  # taken as the process exited (ncclscope's end-of-run dumps)
    UNKNOWN = "unknown"  # any other name: a folder of dumps, the writer not known


class FrField(enum.StrEnum):
    """What differs in a mismatched collective."""

    OP = "op"
    INPUT_SIZES = "input_sizes"
    OUTPUT_SIZES = "output_sizes"
    INPUT_DTYPES = "input_dtypes"
    OUTPUT_DTYPES = "output_dtypes"
    MEMBERS = "members"  # coalesced groups of different lengths
    IN_OUT = "in_out"  # a rank's own input and output disagree for its op (all_gather out != in x group size)
    TOTAL = "total"  # all_to_all: the members' inputs and outputs do not add up to the same number of elements


@dataclass(frozen=True, slots=True)
class FrPart:
    """One rank in one operation."""

    rank: int
    state: FrState
    op: str | None = None  # its own entry's op (``all_reduce``), None when it has none
    t_created: float | None = None  # seconds since the epoch
    timeout_s: float | None = None
    aborted: bool = False  # retired by its watchdog without completing: timed out or aborted
    where: str | None = None  # the call site its entry's stack names


@dataclass(frozen=True, slots=True)
class FrOp:
    """The first operation of a process group (or of one sender -> receiver pair of it) that some
    member takes part in and that did not complete: a collective at ``seq``, or a send/recv."""

    pg: str
    desc: str
    seq: int  # collective_seq_id; a send/recv: the p2p_seq_id of the rank waiting in it
    op: str
    parts: tuple[FrPart, ...]
    src: int | None = None  # a send/recv: the global ranks that send and receive it
    dst: int | None = None

    @property
    def is_p2p(self) -> bool:
        return self.src is not None

    @property
    def pg_key(self) -> str:
        """The process group as the model's tables key it (``<pg>:p2p`` for send/recv counters)."""
        return f"{self.pg}:p2p" if self.is_p2p else self.pg


@dataclass(frozen=True, slots=True)
class FrSide:
    """The ranks that made one same call at a mismatched collective."""

    ranks: tuple[int, ...]
    op: str
    input_sizes: str  # as the dump writes them: "[[4, 4]]"
    input_dtypes: str
    output_sizes: str
    output_dtypes: str
    where: str | None = None
    malformed: str | None = None  # why the call is wrong on its own (its input and output disagree)
    made_elsewhere: tuple[int, ...] = ()  # ranks that made this same call at another point of the group


@dataclass(frozen=True, slots=True)
class FrMismatch:
    """The first collective of a process group whose members' calls disagree, or whose one call is
    wrong on every member."""

    pg: str
    desc: str
    seq: int
    op: str
    fields: tuple[FrField, ...]
    sides: tuple[FrSide, ...]
    member: int | None = None  # the first differing member of a coalesced group (0-based)
    t_created: float | None = None


@dataclass(frozen=True, slots=True)
class FrGroup:
    pg: str
    desc: str
    members: tuple[int, ...]  # global ranks


@dataclass(frozen=True, slots=True)
class FrRank:
    """One rank's dump: which file, who wrote it, what it records."""

    rank: int
    file: str
    origin: DumpOrigin
    timing: bool  # it records start times (TORCH_NCCL_ENABLE_TIMING): 'scheduled' means not started
    wrapped: bool  # its ring buffer dropped older records (the first record id is not 0)
    last_t: float | None  # the latest time it records (seconds since the epoch)
    backend: str | None = None  # "nccl", "gloo", ...


@dataclass(frozen=True, slots=True)
class FrJob:
    ranks: tuple[FrRank, ...]
    groups: tuple[FrGroup, ...]
    pending: tuple[FrOp, ...]  # per group and per send/recv pair, the first operation that did not complete
    mismatches: tuple[FrMismatch, ...]  # per group, the first mismatched collective
    no_dump: tuple[int, ...] = ()  # members of the groups whose dump is not in the input
