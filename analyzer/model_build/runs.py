"""Several runs of one job in one console: judge the last.

A job restarted in the same log (torchrun's elastic agent restarting its worker group, the user starting it again)
prints each run's lines one after the other: the same ranks, claimed again by new processes. Read as one job, the
ranks would be held twice ("a mix of jobs"). Within one log file the runs are cut apart at

- the launcher's word that the job starts again (``sources.restarts.RunRestart``: ``will restart worker group``,
  ``restart_count=N``), where lines of a run follow it; and
- the first NCCL line of the processes that claim a rank again from the same host, when every line of the processes
  before them comes first (the runs do not interleave: two jobs writing at once are a mix, not a restart; the same
  ranks claimed from other hosts are a job per host, the input detector's finding);
- in nccl-tests output, the device block (``#  Rank  0 Group  0 Pid ...``) of other processes that starts after a
  table row of the run before (a second ``# nThread ... nGpus ...`` header once the first run's table has begun: the
  benchmark run again, with other GPUs or another build). Headers of standalone tests on several hosts all come before the rows and
  are no cut.

The records before the last cut are left out; ``Earlier`` says how many runs there were and where the last begins,
so that the verdict can say so, and keeps the earlier nccl-tests runs' large rows (a run far slower than an earlier
one of the same test is a finding of its own). Files of other formats, and logs with no cut, are kept whole."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace

from ..ingest import Parsed
from ..model import EventKind, Evidence, Format, LogEvent
from ..sources import records as R
from ..sources.coll import NcclCollBatch
from ..sources.nccl_tests import RANK_DEV_RE
from ..sources.restarts import RunRestart


@dataclass(frozen=True, slots=True)
class Earlier:
    """The console ``file`` held ``runs`` runs; the last, judged, begins at ``line`` (``text``)."""

    file: str
    runs: int
    line: int
    text: str
    tests: tuple[dict[str, object], ...] = ()  # the earlier runs' nccl-tests rows of bandwidth-bound sizes (``TESTS_KEPT_BYTES``)


def split_runs(parsed: list[Parsed]) -> tuple[list[Parsed], Earlier | None]:
    """``parsed`` with each log's records before its last run left out, and the cut made (the last file's, when
    several logs were cut)."""
    out: list[Parsed] = []
    note: Earlier | None = None
    for p in parsed:
        cut = _cut(p) if p.fmt is Format.LOG else _tests_cut(p.records) if p.fmt is Format.NCCL_TESTS else None
        if cut is None:
            if any(isinstance(r, RunRestart) for r in p.records):  # the marks are read here, and only here
                p = replace(p, records=[r for r in p.records if not isinstance(r, RunRestart)])
            out.append(p)
            continue
        line, runs = cut
        kept = [r for r in p.records if _line_of(r) >= line and not isinstance(r, RunRestart)]
        first = kept[0] if kept else next(r for r in p.records if _line_of(r) >= line)
        note = Earlier(p.file, runs, first.line, first.text.strip()[:300], _earlier_tests(p.records, line))
        out.append(replace(p, records=kept))
    return out, note


EARLIER_RUNS_EVENT = EventKind.EARLIER_RUNS
TESTS_KEPT_BYTES = 8 << 20  # earlier runs' rows kept for a comparison with the judged run (latency-bound ones are not)


def _earlier_tests(records: list[R.Rec], line: int) -> tuple[dict[str, object], ...]:
    """The nccl-tests rows before the last run's start (``detectors.slow_compare`` holds the runs side by side), each
    with the NCCL release its run printed last before it (``version``: the run's own, dropped with its records)."""
    out = []
    version: str | None = None
    for r in sorted((r for r in records if r.line < line), key=_line_of):
        if isinstance(r, R.NcclVersion):
            version = r.version
        elif isinstance(r, R.NcclTestsRow) and r.size >= TESTS_KEPT_BYTES:
            out.append({"file": r.file, "line": r.line, "test": r.test, "nranks": r.nranks, "size": r.size,
                        "busbw": r.busbw, "in_place": r.in_place} | ({"version": version} if version else {}))
    return tuple(out)


def earlier_runs(e: Earlier | None) -> list[LogEvent]:
    """The cut as an event of the run (``EARLIER_RUNS_EVENT``), at the last run's first line."""
    if e is None:
        return []
    return [LogEvent(EARLIER_RUNS_EVENT, None, f"{e.file} holds {e.runs} runs of the job; the last, from line {e.line}, "
                     "is judged", Evidence(e.file, e.line, e.text), None, {"runs": e.runs, "line": e.line}
                     | ({"earlier_tests": list(e.tests)} if e.tests else {}))]


def _line_of(r: R.Rec) -> int:
    return int(r.lines[0]) if isinstance(r, NcclCollBatch) and len(r.lines) else r.line


def _cut(p: Parsed) -> tuple[int, int] | None:
    """(the line the last run starts at, how many runs the log holds), or None. A log of one process with no
    restart mark holds one run: told by one pass over its records (a rank's own log, thousands of them at
    scale), before the claims are counted."""
    procs = {(r.host, r.pid) for r in p.records if isinstance(r, R.NcclRec) and r.pid}
    if len(procs) < 2 and not any(isinstance(r, RunRestart) for r in p.records):
        return None
    claims = _claim_cuts(p.records)
    marks = [r.line for r in p.records if isinstance(r, RunRestart)]
    after = [m for m in marks if any(_line_of(r) > m and not isinstance(r, RunRestart) for r in p.records)]
    if not claims and not after:
        return None
    return max(claims[-1:] + after[-1:]), 1 + max(len(claims), len(_distinct(after, p.records)))


def _tests_cut(records: list[R.Rec]) -> tuple[int, int] | None:
    """(the line the last nccl-tests run starts at, how many runs the output holds), or None: a run starts at a
    device line of a process the run before did not list, following a table row with no device line between (its
    header's ``# nccl-tests version`` line, read as ``NcclVersion``, is the run's too). One process printing a header
    for each of its tests (``ncclscope perf``, a binary running several collectives) is one run."""
    starts: list[int] = []
    row_seen = False
    end = before = 0  # the last table row or end mark so far; that of the run before the last start
    procs: set[tuple[str, int]] = set()  # the processes of the current run's device lines
    for r in sorted(records, key=_line_of):
        if isinstance(r, (R.NcclTestsRow, R.ExitCode)):
            row_seen = True
            end = r.line
        elif type(r) is R.NcclRec and RANK_DEV_RE.match(r.text):
            if row_seen and (r.host, r.pid) not in procs:  # the same process going on to its next test: one run
                starts.append(r.line)
                procs, before = set(), end
            row_seen = False
            procs.add((r.host, r.pid))
    if not starts:
        return None
    header = [r.line for r in records if isinstance(r, R.NcclVersion) and r.text.startswith("#")
              and before < r.line < starts[-1]]
    return min(header + starts[-1:]), 1 + len(starts)


def _distinct(cuts: list[int], records: list[R.Rec]) -> list[int]:
    """The cuts with a line of a run between each and the next (a restart's several marks are one cut)."""
    out: list[int] = []
    lines = sorted(_line_of(r) for r in records if not isinstance(r, RunRestart))
    for c in cuts:
        if not out or any(out[-1] < ln < c for ln in lines if ln > out[-1]):
            out.append(c)
    return out


def _claim_cuts(records: list[R.Rec]) -> list[int]:
    """Where each run after the first begins: the first line of the processes that claim a rank of a top-level
    communicator again (the k-th claim of each rank: run k+1), where every NCCL line of the run before comes first."""
    first: dict[tuple[str, int], int] = {}
    last: dict[tuple[str, int], int] = {}
    claims: dict[tuple[int, int], list[tuple[str, int]]] = defaultdict(list)  # (nranks, rank) -> processes
    for r in records:
        if not isinstance(r, R.NcclRec) or not r.pid:
            continue
        key = (r.host, r.pid)
        ln = _line_of(r)
        first.setdefault(key, ln)
        last[key] = max(last.get(key, ln), int(r.lines[-1]) if isinstance(r, NcclCollBatch) and len(r.lines) else ln)
        if isinstance(r, R.NcclInit) and r.parent and r.parent != "(nil)":
            continue  # a split's rank is not a rank of the job
        if isinstance(r, (R.NcclInit, R.NcclCommInfo)) and key not in claims[(r.nranks, r.rank)]:
            claims[(r.nranks, r.rank)].append(key)
    gens: dict[int, int] = {}  # the k-th claim of a rank (k >= 1: a run after the first) -> its earliest first line
    for procs in claims.values():
        for k, (a, b) in enumerate(zip(procs, procs[1:]), 1):
            if last[a] >= first[b] or a[0] != b[0]:
                return []  # two claimants writing at once, or from two hosts (a job per host): not a restart
            gens[k] = min(gens.get(k, first[b]), first[b])
    cuts = [gens[k] for k in sorted(gens)]
    for before, start in zip([0, *cuts], cuts):  # each run's processes end before the next run starts
        if any(before <= first[k] < start and last[k] >= start for k in first):
            return []
    return cuts
