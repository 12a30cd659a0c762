"""An MPI launch whose program never printed: the command's line in a console, then nothing of the program before an
interrupt (``^C``) or before the text ends in the runtime's own debug chatter.

mpirun starts its daemons on every node (over ssh), wires them up over its out-of-band channel, then starts the
program. When the nodes cannot reach each other on the ports and interfaces the runtime picked (a firewall, an
interface it should not use, a daemon that cannot start), mpirun waits with nothing printed: no line of the program,
no NCCL line. A console that shows such a command, nothing after it but the runtime's own ``[host:pid] ...``
verbose lines (``--mca oob_base_verbose``), and the user's Ctrl-C (or the end of the text inside that chatter) shows
a launch that never ran the program. A new prompt without an interrupt is a command that ended by itself: not this.
"""
from __future__ import annotations

import re

from .pasted import PROMPT
from .records import LaunchSilent

# the command, typed after a shell prompt ("user@host:~$ ", "$ ", "# ") or alone on its line
MPI_COMMAND_RE = re.compile(
    r"^(?:" + PROMPT + r"\s+)?"
    r"(?:[\w./-]{0,200}/)?(?P<cmd>mpirun|mpiexec|orterun|prterun)\s+(?P<args>\S.{0,4000})$")
RTE_CHATTER_RE = re.compile(r"^\[[\w.-]{1,255}:\d{1,10}\] ")  # ORTE / PRRTE's debug head: "[gpu-a17:2874110] ..."
NOT_A_RUN = ("--version", "--help", "-V ", "-h ")  # a command that asks the launcher about itself runs no program
MIN_CHATTER = 3  # runtime lines that make an uninterrupted end of text a launch still at work


class LaunchSilence:
    """Fed a console's lines in order; gives a ``LaunchSilent`` record for each MPI launch its program never printed
    under (``feed`` and, at the end of the text, ``flush``)."""

    __slots__ = ("chatter", "cmd", "file")

    def __init__(self, file: str) -> None:
        self.file = file
        self.cmd: tuple[int, str, str] | None = None  # (line, text, launcher) of a launch nothing has answered yet
        self.chatter = 0

    def feed(self, lineno: int, text: str) -> LaunchSilent | None:
        if self.cmd is None and "mpi" not in text and "rterun" not in text:  # most lines: one or two substring tests
            return None
        body = text.strip()
        out = None
        if self.cmd is not None and body:
            if body.startswith("^C") or (body.endswith("^C") and len(body) < 8):  # the terminal's echo of Ctrl-C
                out = self._silent(interrupted=True)
            elif RTE_CHATTER_RE.match(body):
                self.chatter += 1
                return None
            else:
                self.cmd = None  # the program (or the launcher's own error) printed, or a new prompt came
        if ("mpi" in body or "rterun" in body) and (m := MPI_COMMAND_RE.match(body)):
            args = m.group("args") + " "
            if not any(a in args for a in NOT_A_RUN):
                self.cmd, self.chatter = (lineno, text, m.group("cmd")), 0
        return out

    def flush(self) -> LaunchSilent | None:
        if self.cmd is not None and self.chatter >= MIN_CHATTER:
            return self._silent(interrupted=False)
        return None

    def _silent(self, interrupted: bool) -> LaunchSilent | None:
        assert self.cmd is not None
        line, text, cmd = self.cmd
        self.cmd = None
        return LaunchSilent(self.file, line, text, None, None, None, None, cmd, interrupted, self.chatter)
