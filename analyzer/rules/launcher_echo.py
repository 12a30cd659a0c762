"""A launcher's own report that a process it started failed: an echo of that process's end, not a failure of its own.

torchrun raises ``ChildFailedError``; the older ``python -m torch.distributed.launch``, ``accelerate launch`` and
DeepSpeed's launcher raise ``subprocess.CalledProcessError`` (``Command '[.../python', '-u', 'train.py', ...]'
returned non-zero exit status 1`` / ``died with <Signal 6: SIGABRT>``); ``torch.multiprocessing.spawn`` raises a bare
``Exception`` (``ProcessRaisedException`` since torch 1.9) whose message is the child's traceback, printed after it, or
``ProcessExitedException`` for a child killed by a signal. Each traceback ends in the launcher's own module. What the
child printed is the failure; the launcher's word counts only when nothing else in the input says the job failed
(``with_echoes``), except torchrun's ``ChildFailedError``, whose summary's own records give each child's end.
Pure: an exception's type and its traceback's frames to a yes or no.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")

# the modules a launcher raises its report from (a frame "path:line in function", sources.torch_log)
LAUNCHER_FRAME_RE = re.compile(r"(?:torch/distributed/(?:launch|run)\.py|torch/multiprocessing/spawn\.py|"
                               r"accelerate/commands/launch\.py|deepspeed/launcher/\w+\.py|"
                               r"torch/distributed/elastic/multiprocessing/)")
ECHO_TYPES = ("CalledProcessError", "ProcessRaisedException", "ProcessExitedException", "Exception",
              "ChildFailedError")


def launcher_echo(exc_type: str, frames: Sequence[object]) -> bool:
    """The exception is a launcher's report of a child's end: its type is one a launcher raises and its traceback's last
    frame is in the launcher's module (a ``CalledProcessError`` of the user's own ``subprocess.run`` ends elsewhere)."""
    name = exc_type.rsplit(".", 1)[-1]
    if name not in ECHO_TYPES:
        return False
    if name == "ChildFailedError":
        return True
    return bool(frames) and LAUNCHER_FRAME_RE.search(str(frames[-1])) is not None


def with_echoes(failures: Sequence[T], echoes: Sequence[T]) -> list[T]:
    """The time line: the failures, or where there is none the launchers' reports of a child's end (its only word that
    the job failed). The one rule for the live monitor and the offline analysis alike."""
    return list(failures) if failures else list(echoes)
