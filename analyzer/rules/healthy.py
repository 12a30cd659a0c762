"""A job that went on: nothing failed, nothing stalled, and what it printed shows it working or done.

``verdict`` calls a job healthy only when no detector found an incident; this rule says when the text itself is
enough to say so where no collective, communicator or exit record is in the input (a pasted console, a server's
start, the ranks' own prints), and when warnings the detectors report as errors were outlived: the program kept
printing its progress after them in the same file.

- Every rank seen printed its own end (``RankFinished``): the job ran to its end.
- The launcher said its workers ended well (torchrun's ``worker group successfully finished``, DeepSpeed's
  ``exits successfully``).
- The program printed its progress (training steps with a loss or a throughput, a test's ``passed``, a server up
  and answering) at least ``MIN_PROGRESS`` times.

Never when anything failed (a failure of the time line: an exception, a timeout, an interrupt, a kill, a network
error), when a stall was seen, or when an exit code is non-zero: those are the other rules' stories."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

MIN_PROGRESS = 2  # progress prints that show a program working (one line may be the last before a hang)


@dataclass(frozen=True, slots=True)
class WentOn:
    why: str
    progress_after: Mapping[str, int]  # file -> the line of its last progress print

    def outlived(self, at: tuple[str, int]) -> bool:
        """The program printed progress after ``at`` (file, line), in the same file."""
        last = self.progress_after.get(at[0])
        return last is not None and last > at[1]


def went_on(progress: Iterable[tuple[str, int, int]], failed: bool, stalled: bool, exit_code: int | None,
            seen: Iterable[int], finished: Iterable[int], launcher_ok: bool) -> WentOn | None:
    """``progress``: (file, last line, count) of each file's progress prints; ``failed``: the time line holds a
    failure; ``seen`` / ``finished``: the ranks the input shows and those that printed their own end."""
    if failed or stalled or exit_code not in (None, 0):
        return None
    marks = list(progress)
    last = {f: n for f, n, _ in marks}
    ranks, done = set(seen), set(finished)
    if ranks and ranks <= done:
        return WentOn(f"every rank the input shows ({len(ranks)}) printed its own end, and nothing failed", last)
    if launcher_ok:
        return WentOn("the launcher reported that its workers finished successfully, and nothing failed", last)
    count = sum(c for _, _, c in marks)
    if count >= MIN_PROGRESS:
        return WentOn(f"the program kept printing its progress ({count} lines) and nothing failed, timed out or "
                      "was stopped", last)
    return None
