"""What an exit code and an error message mean for the root cause: the one definition of "ended
from outside", "the user's interrupt" and "an echo of a peer's failure"."""
from __future__ import annotations

import enum
import re


class ExitClass(str, enum.Enum):
    CLEAN = "clean"  # 0
    OWN = "own"  # the process ended itself with a non-zero code (an exception, sys.exit, os._exit)
    FATAL = "fatal"  # a fatal signal of its own (SIGSEGV, SIGBUS, SIGFPE, SIGILL)
    ABORT = "abort"  # SIGABRT: PyTorch's watchdog after a timeout, or a C++ exception / assertion
    KILLED = "killed"  # SIGTERM / SIGKILL / timeout(1): ended from outside (launcher, scheduler, OOM killer)
    INTERRUPT = "interrupt"  # SIGINT: the user's Ctrl-C
    UNKNOWN = "unknown"


KILLED_CODES = frozenset({124, 137, 143, -9, -15})  # timeout(1), 128+9, 128+15, and the signals
INTERRUPT_CODES = frozenset({130, -2})
ABORT_CODES = frozenset({134, -6})
FATAL_CODES = frozenset({-11, -7, -8, -4, 139, 135, 136, 132})


def exit_class(code: int | None) -> ExitClass:
    if code is None:
        return ExitClass.UNKNOWN
    if code == 0:
        return ExitClass.CLEAN
    if code in KILLED_CODES:
        return ExitClass.KILLED
    if code in INTERRUPT_CODES:
        return ExitClass.INTERRUPT
    if code in ABORT_CODES:
        return ExitClass.ABORT
    if code in FATAL_CODES or code < 0:
        return ExitClass.FATAL
    return ExitClass.OWN


def from_outside(code: int | None) -> bool:
    """Ended by a signal someone else sent: the launcher, the scheduler, the user."""
    return exit_class(code) in (ExitClass.KILLED, ExitClass.INTERRUPT)


class FailureKind(str, enum.Enum):
    # causes
    OOM = "oom"
    CUDA = "cuda_error"
    NCCL = "nccl_error"
    NETWORK = "network_error"  # a local network failure (IB completion error, socket error of its own)
    EXCEPTION = "exception"
    EXIT = "exit"  # ended itself with a non-zero code, nothing else known
    FATAL = "fatal_signal"
    VANISHED = "vanished"  # stopped writing without an exit record while the others went on
    GPU = "gpu_fault"  # the driver's kernel log: a GPU or its NVLink failed (a fatal Xid, fallen off the bus)
    # symptoms and echoes
    TIMEOUT = "timeout"
    PEER = "peer_gone"  # connection closed / reset by peer, remote process exited
    ABORT = "abort"
    KILLED = "killed"
    INTERRUPT = "interrupt"
    MISMATCH = "collective_mismatch"  # the backend saw ranks call different collectives (a desync's symptom)


CAUSES = frozenset({FailureKind.OOM, FailureKind.CUDA, FailureKind.NCCL, FailureKind.NETWORK,
                    FailureKind.EXCEPTION, FailureKind.EXIT, FailureKind.FATAL, FailureKind.VANISHED, FailureKind.GPU})

INTERRUPT_RE = re.compile(r"KeyboardInterrupt|SignalException|Signal 2 \(SIGINT\)|Signal 15 \(SIGTERM\)|"
                          r"got signal: ?(?:2|15)\b")
# another rank's failure seen from here
# (vLLM's EngineDeadError is its API server's word that the engine core failed: what failed is printed above it)
PEER_RE = re.compile(r"(?i)by peer|broken pipe|connection (?:refused|closed|reset)|remote process exit|"
                     r"peer (?:closed|disconnected)|DistNetworkError|ProcessGroupGloo.*(?:read|write)|"
                     r"EngineDeadError")
TIMEOUT_RE = re.compile(r"(?i)timed? ?out|timeout|watchdog caught collective operation|aborted|abort\b|"
                        r"NCCL communicator was aborted|DistStoreError")
OOM_RE = re.compile(r"MemoryError|OutOfMemoryError|(?i:out of memory)|CUBLAS_STATUS_ALLOC_FAILED")
CUDA_RE = re.compile(r"CUDA error|cudaError|illegal memory access|CUDA kernel errors|device-side assert|"
                     r"uncorrectable ECC|Xid")
NCCL_RE = re.compile(r"NCCL error|ncclInternalError|ncclInvalidUsage|ncclSystemError|ncclInvalidArgument|"
                     r"ncclUnhandledCudaError|ncclRemoteError")
# a backend's own report that the ranks' calls differ: gloo's EnforceNotMet ("Is there a distributed
# collective mismatch in your code?"), NCCL's, PyTorch's DETAIL check; the rank saw a desync, it did not fail
# a backend's or a library's own check that the ranks called a collective differently: gloo's enforce, NCCL's and
# PyTorch's DETAIL check, Accelerate's debug-mode check of a gather's or reduce's input shapes across processes
# ("DistributedOperationException: Cannot apply desired operation due to shape mismatches")
MISMATCH_RE = re.compile(r"(?i)Is there a distributed collective mismatch|Mismatched collective detected|"
                         r"Detected mismatch between collectives|Cannot apply desired operation due to shape mismatch")
NETWORK_RE = re.compile(r"(?i)got completion (?:from peer .* )?with error|ibv_|NET/IB|NET/Socket")


def is_echo_text(text: str) -> bool:
    """The message is what a rank sees of another rank's failure (or of its own timeout)."""
    return bool(PEER_RE.search(text)) or bool(TIMEOUT_RE.search(text))


def failure_kind(text: str, code: int | None = None) -> FailureKind:
    """An error message (exception type and message, last NCCL error) and the exit code when known,
    to one kind. The order matters: the user's interrupt, then an echo of a peer, then a timeout
    (an echo of a stall), then what failed here."""
    if INTERRUPT_RE.search(text) or (not text and exit_class(code) is ExitClass.INTERRUPT):
        return FailureKind.INTERRUPT
    if MISMATCH_RE.search(text):
        return FailureKind.MISMATCH
    if OOM_RE.search(text):
        return FailureKind.OOM
    if CUDA_RE.search(text) and "ncclRemoteError" not in text:
        return FailureKind.CUDA
    if "ncclRemoteError" in text or PEER_RE.search(text):
        return FailureKind.PEER
    if TIMEOUT_RE.search(text):
        return FailureKind.TIMEOUT
    if NCCL_RE.search(text):
        return FailureKind.NCCL
    if NETWORK_RE.search(text):
        return FailureKind.NETWORK
    if text:
        return FailureKind.EXCEPTION
    return _kind_of_code(code)


def _kind_of_code(code: int | None) -> FailureKind:
    c = exit_class(code)
    return {ExitClass.KILLED: FailureKind.KILLED, ExitClass.INTERRUPT: FailureKind.INTERRUPT,
            ExitClass.ABORT: FailureKind.ABORT, ExitClass.FATAL: FailureKind.FATAL}.get(c, FailureKind.EXIT)
