"""What NCCL's own diagnostics say (2.31+), as the model keeps it: one ``DiagResult`` per report line.

NCCL prints two kinds of diagnostics, each line ``<host>:<pid> NCCL DIAG <text>`` on the standard output of the
process hosting rank 0 of the communicator (or sent back over the RAS client connection):

- RAS diagnostics (``NCCL_RUN_RAS_DIAGNOSTICS=1`` at each communicator init, or ``ncclras -D`` / ``echo diagnostics
  | nc host 28028`` on demand) compare what every rank reports: GPU inventory, CUDA driver version, volatile ECC
  counters, NVLink state, every ``NCCL_*`` variable (2.32 adds the NVIDIA driver version and more);
- active diagnostics (``NCCL_RUN_DIAGNOSTICS=1``) write and read back over every direct GPU P2P pair at init.

A result line is tagged ``[OK]`` or ``[INFO]`` (NCCL 2.31 and 2.32 print no other tag); ``check`` is what the line is
about, ``problem`` what it reports. ``sources.nccl_diag`` reads the lines; ``rules.consistency`` judges them.
``model`` imports these classes, so the cache reads them back like the rest of the model.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field


class DiagSource(enum.StrEnum):
    """Which diagnostics printed the line: the report's header says (``=== RAS Diagnostics ===``)."""

    RAS = "ras"  # RAS diagnostics: the state of every rank compared
    ACTIVE = "active"  # active diagnostics: data written over the GPU P2P paths at init
    UNKNOWN = "unknown"  # a result line seen without its report's header


class DiagLevel(enum.StrEnum):
    """The line's tag. NCCL 2.31 / 2.32 print ``[OK]`` and ``[INFO]`` only; a later release's ``[WARN]`` / ``[FAIL]``
    / ``[ERROR]`` are read as such; ``NONE`` for the header and completion lines, which carry no tag."""

    OK = "ok"
    INFO = "info"
    WARN = "warn"
    FAIL = "fail"
    ERROR = "error"
    NONE = "none"


class DiagCheck(enum.StrEnum):
    """What a line is about: the check's name as NCCL prints it before the colon."""

    GPU_INVENTORY = "GPU inventory"  # GPUs per node and their model
    CUDA_DRIVER = "CUDA driver version"  # the CUDA version the driver supports (cuDriverGetVersion)
    NVIDIA_DRIVER = "NVIDIA graphics driver version"  # 2.32: the driver release (NVML)
    ECC = "ECC"  # volatile ECC counters of each rank's GPU
    NVLINK = "NVLink"  # links per GPU, their state (2.32: and speed)
    NCCL_ENV = "NCCL environment"  # every NCCL_* variable, name and value
    P2P = "p2p"  # active diagnostics: writes and reads over each direct GPU pair
    TRANSPORT = "transport"  # active diagnostics: the transport detection step
    REPORT = "report"  # the report's header, completion line or failure ("ERROR: diagnostics summary failed")
    RAS_REPLY = "RAS reply"  # the RAS client protocol's own answer: OK, ERROR: ..., BUSY: ...
    OTHER = "other"  # another check (2.32: RDMA topology, IOMMU, ATS, Xid/SXid, paths)


class DiagProblem(enum.StrEnum):
    """What a line reports."""

    NONE = "none"  # a check that passed, a header, a completion line, an accepted command
    DIFFERS = "differs"  # a value differs across the communicator's ranks (a setting, a driver, a GPU model)
    ECC_UNCORRECTED = "ecc_uncorrected"  # uncorrected volatile ECC errors on some ranks' GPUs
    ECC_CORRECTED = "ecc_corrected"  # corrected ones at or above NCCL_DIAGNOSTICS_ECC_THRESHOLD
    LINK_INACTIVE = "link_inactive"  # NVLinks not active on some ranks' GPUs
    LINK_SPEED = "link_speed"  # NVLinks of inconsistent speed (2.32)
    P2P_FAILED = "p2p_failed"  # a GPU pair failed the P2P write / read check, or its set-up
    INCOMPLETE = "incomplete"  # the check did not hear from every rank
    UNAVAILABLE = "unavailable"  # the value could not be read (NVML, the driver)
    FAILED = "failed"  # the diagnostics themselves failed ("active check returned 3", "summary failed")
    BUSY = "busy"  # a request refused: diagnostics were already running in that process
    REFUSED = "refused"  # an ERROR answer of the RAS client protocol (a bad CONTROL value, a JSON diagnostics request)
    NOTICE = "notice"  # any other [INFO] line


@dataclass(frozen=True, slots=True)
class DiagResult:
    """One line of a diagnostics report (or of a RAS answer), read.

    ``comm``: the communicator's hash as printed (``0x1234``); ``nranks``: its size as the line says. ``ranks``: the
    communicator ranks the line names (at most 8 are printed; ``ranks_total`` is the group's size when the list was
    cut, ``{0,1,...} (N=12)``). ``reference_rank`` / ``value``: the rank the others differ from and its value
    (``differ from rank 0 (13000)``), or an ``NCCL_*`` variable's value on ``ranks``. ``key``: what differs (the
    variable's name, ``count`` / ``model`` for the GPU inventory, ``link-count`` for NVLink); ``peer``: the other rank
    of a P2P pair (``ranks`` holds the source). ``host`` / ``pid``: the process that printed it (empty / 0 when the
    line's head was lost). ``file`` / ``line`` / ``text``: where it was read."""

    source: DiagSource
    level: DiagLevel
    check: DiagCheck
    problem: DiagProblem
    # the line after its tag; not compared, as the file, line and text are not: two readings of a line are equal when
    # what they say is (so that a line followed by the application's is not taken for a hard-wrapped one)
    message: str = field(compare=False)
    comm: str | None = None
    nranks: int | None = None
    ranks: tuple[int, ...] = ()
    ranks_total: int | None = None
    reference_rank: int | None = None
    key: str | None = None
    value: str | None = None
    peer: int | None = None
    host: str = field(default="", compare=False)
    pid: int = field(default=0, compare=False)
    file: str = field(default="", compare=False)
    line: int = field(default=0, compare=False)
    text: str = field(default="", compare=False)
