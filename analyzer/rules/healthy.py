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
error), when a stall was seen, or when an exit code is non-zero: those are the other rules' stories.

What an input that shows only a normal start covers (``start_only``), healthy as far as it goes (certainty possible):

- NCCL's lines alone, every communicator's init complete (Init COMPLETE, ``Init timings``), and nothing after them:
  no collective launched (no COLL line, no 2.3-2.8 ``Launch mode`` line, which NCCL prints at the first launch, no
  TRACE ``NCCL CALL ncclAllReduce``) and no line of the application or its launcher anywhere in the input. NCCL prints
  nothing while a job trains, so a file of its lines (NCCL_DEBUG_FILE, a paste of them) that ends at init is how a
  healthy start looks; a stream that also carried the application's output and fell silent after init, or a
  collective launched and never heard of again, is the hang rules' (``hang.ends_after_init``). Slow is not hung:
  an init that took a minute and completed is a start like any other (its time is said).
- A completed nccl-tests sweep: every size of its table ran, the benchmark's summary printed.
- A server's start that ended: its ready line (``Application startup complete``, ``Uvicorn running on``), nothing
  failed or stalled, the last progress print of the input. What came after (the requests) is not in it."""
from __future__ import annotations

import re

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


@dataclass(frozen=True, slots=True)
class Covered:
    """What an input that shows only a normal start covers, said plainly (the verdict's headline)."""

    why: str


SLOW_INIT_S = 30.0  # an init this long is said to be slow (it completed: slow is not hung)


def start_only(communicators: Iterable[tuple[int, int]], init_seconds: float | None, launched: bool,
               application: bool, collectives: bool, failed: bool, exit_code: int | None) -> Covered | None:
    """``communicators``: (nranks, ranks that printed Init COMPLETE) of each; ``init_seconds``: the longest init a
    rank reported (``Init timings``), None when not printed; ``launched``: a collective was launched (Launch mode,
    NCCL CALL); ``application``: a line of the application or a launcher is in the input (NCCL's own lines behind a
    launcher's prefix too: the stream is the job's console); ``collectives``: a collective was recorded. The input
    shows NCCL's start alone and that it completed on every rank of every communicator: what it covers, else None
    (a log that shows some ranks of a communicator says nothing of the others)."""
    comms = list(communicators)
    if (not comms or any(done != nranks for nranks, done in comms) or launched or application or collectives or failed
            or exit_code not in (None, 0)):
        return None  # a communicator some of whose ranks the input does not show complete: it says nothing of them
    nranks = max(n for n, _ in comms)
    took = f" in {init_seconds:.2f} s" if init_seconds is not None else ""
    slow = " (a slow init, but it completed)" if init_seconds is not None and init_seconds >= SLOW_INIT_S else ""
    more = f" ({len(comms)} communicators)" if len(comms) > 1 else ""
    return Covered(f"{nranks} of {nranks} ranks finished init{took}{slow}{more}; nothing after it: the input covers "
                   "the job's start only, which was normal")


EXCERPT_MAX_LINES = 4  # NCCL's INFO lines this few are lines quoted to ask about them: one process's init alone prints
# more (bootstrap, network, version, affinity, channels) before it could stop in its set-up


def quoted_info(lines: int, nccl_files: int, after_nccl: bool, warned: bool, communicators: bool, collectives: bool,
                failed: bool, exit_code: int | None) -> Covered | None:
    """A short quote (``lines``: the lines of the files holding NCCL's, at most ``EXCERPT_MAX_LINES``) whose NCCL lines
    (in ``nccl_files`` files, none followed by a line of the program: ``after_nccl``) are all INFO: no WARN, no
    communicator built, no collective, nothing failed, no exit but a clean one. A few lines quoted to ask what they
    mean (a plugin not found, a channel without GPU Direct RDMA) show nothing going wrong; they are no log that
    stopped in NCCL's set-up. What it covers, else None."""
    if (not nccl_files or not 0 < lines <= EXCERPT_MAX_LINES or after_nccl or warned or communicators or collectives
            or failed or exit_code not in (None, 0)):
        return None
    return Covered(f"the input is {lines} line{'s' if lines > 1 else ''} quoted from NCCL's INFO output, none a warning "
                   "or an error: they show nothing going wrong, and say nothing of the job beyond them")


def sweep_done(rows: int, sizes: Iterable[int], exit_code: int | None, failed: bool) -> Covered | None:
    """nccl-tests output whose sweep ran to its summary (``exit_code`` 0 from it): what it covers, else None."""
    ss = sorted(set(sizes))
    if not rows or not ss or exit_code != 0 or failed:
        return None
    return Covered(f"the nccl-tests sweep completed: {len(ss)} sizes from {_size(ss[0])} to {_size(ss[-1])} ran and its "
                   "summary printed; the input covers that benchmark only")


def server_ready(ready: bool, failed: bool, stalled: bool, exit_code: int | None) -> Covered | None:
    """A server whose start-up ended (``ready``: its ready line is the input's last progress print) and nothing
    failed or stalled: what it covers, else None."""
    if not ready or failed or stalled or exit_code not in (None, 0):
        return None
    return Covered("the server finished its start-up and reported ready; nothing after it: the input covers the "
                   "start only, which was normal")


# a progress bar or counter at its end: tqdm's "100%|" and "64/64", a step counter's "step 320/320"
BAR_DONE_RE = re.compile(r"\b100%\||(?:^|(?<=[\s|(])|(?<=\[batch=)|(?<=\[step=))(?P<n>[1-9]\d{0,9})/(?P=n)(?=$|[\s\[|,)\]])"
                         r"|(?:^|(?<!=)=+ )[1-9]\d{0,6} passed(?:, \d{1,7} (?:skipped|xfailed|xpassed|deselected|warnings?|rerun))* in \d[\d.]{0,12}s")
# (pytest's summary of a session whose every test passed ends its work as a bar at its end does)


COUNTER_RE = re.compile(r"(?<![\d/])(\d{1,10})/(\d{1,10})(?![\d/])")


def work_done(last_progress: str | None, failed: bool, stalled: bool, exit_code: int | None) -> Covered | None:
    """The program's last progress print is a bar or counter at its end (``BAR_DONE_RE``: the work it counts
    completed) and nothing failed or stalled: what the input covers, else None."""
    m = BAR_DONE_RE.search(last_progress or "")
    if m is None or failed or stalled or exit_code not in (None, 0):
        return None
    if any(int(a) < int(b) for a, b in COUNTER_RE.findall(last_progress or "")):
        return None  # another counter on the line still short of its end ("epoch 1/3 step 500/500")
    return Covered(f"the program's progress reached its end ({m.group(0).rstrip('|')}): the work it counted completed, "
                   "and nothing failed or stalled")


def teardown_reached(cleanup_warns: int, other_warns: int, failed: bool, stalled: bool,
                     exit_code: int | None) -> Covered | None:
    """NCCL's clean-up WARNs (``rules.reclaim``: freeing a communicator failed) and no other WARN, failure or stall:
    the job got to destroying its communicators, which it does at its end, and nothing failed before. What it
    covers, else None (an abort after an error prints the same clean-up WARNs, and that error beside them)."""
    if not cleanup_warns or other_warns or failed or stalled or exit_code not in (None, 0):
        return None
    return Covered(f"the job reached its communicators' clean-up at its end ({cleanup_warns} NCCL WARN line"
                   f"{'s' if cleanup_warns > 1 else ''} of the clean-up itself, which fails after the work is done) "
                   "and nothing failed before it")


def _size(n: int) -> str:
    for unit, k in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= k and n % k == 0:
            return f"{n // k} {unit}"
    return f"{n} B"

