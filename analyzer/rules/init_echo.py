"""A framework's own word that the start failed, after an NCCL init that never completed: the init hang's echo.

Serving and training frameworks watch their workers' start (SGLang's scheduler watchdog, vLLM's engine core
handshake, Ray's ``ray.get`` of a worker's init, an elastic agent's rendezvous) and give up with a line of their own:
"Rank 0 scheduler died (exit code: -9)", "Engine core initialization failed", "Timed out waiting for workers",
"Get timed out: some object(s) not ready". When a communicator's init started and never completed on some rank, such
a line names no cause of its own: it is what the stalled init looks like from the framework, and the init hang is the
verdict (its culprits the ranks still in init). A line that names a cause (an out-of-memory error, a CUDA or NCCL
error: ``exits.failure_kind`` says so) stays that cause."""
from __future__ import annotations

import re
from collections.abc import Iterable

from .cause import Failure
from .exits import FailureKind

START_FAILED_RE = re.compile(
    r"(?i)\b(?:died|is dead|not responding|timed? ?out|time-?out|failed to (?:start|initiali[sz]e|launch|become ready)|"
    r"initiali[sz]ation (?:failed|timed out|did not complete)|did not (?:start|become ready)|not ready|"
    r"waiting for (?:\w+ ){0,3}(?:workers?|ranks?|processes|engines?|schedulers?|actors?)|exit code:? ?-\d{1,3})")
ECHO_PREFIX = "the framework gave up on the start: "


def is_init_echo(text: str) -> bool:
    """The framework's message says a worker's start failed or timed out, with no cause of its own in its words."""
    return bool(START_FAILED_RE.search(text))


def init_echoes(failures: Iterable[Failure], init_stalled: bool) -> list[Failure]:
    """``init_stalled``: some communicator's init started and never completed on some rank. Each exception that is
    only the framework's word of a failed start (``is_init_echo``) becomes a timeout of that start (an echo)."""
    fs = list(failures)
    if not init_stalled:
        return fs
    return [Failure(f.rank, FailureKind.TIMEOUT, f"{ECHO_PREFIX}{f.text}"[:500], f.t, f.order, f.code)
            if _framework_word(f) and is_init_echo(f.text) else f for f in fs]


def _framework_word(f: Failure) -> bool:
    """An exception of the program's own, or a timeout that is not PyTorch's watchdog on a collective."""
    if f.text.startswith(ECHO_PREFIX):
        return False
    return f.kind is FailureKind.EXCEPTION or (f.kind is FailureKind.TIMEOUT and "WorkNCCL" not in f.text
                                               and "atchdog" not in f.text)


def is_echo_of_init(f: Failure) -> bool:
    """``f`` is a framework's word of a failed start, read as the init hang's echo (``init_echoes``)."""
    return f.kind is FailureKind.TIMEOUT and f.text.startswith(ECHO_PREFIX)
