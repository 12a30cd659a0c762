"""PyTorch c10d (ProcessGroupNCCL watchdog, desync, DETAIL mismatch) and torchrun lines.

glog prefix: ``[rank0]:[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629] msg``; the ``[rankN]:``
part comes from torchrun's ``--tee``/``local_ranks_filter`` or is absent. Tracebacks arrive as
``[rankN]: Traceback ...`` blocks. torchrun's failure summary is a block of ``key : value`` lines
under ``Failures:`` / ``Root Cause (first observed failure):``.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from .records import (
    CollectiveMismatch,
    DesyncReport,
    DistError,
    DumpSignal,
    HeartbeatTimeout,
    LauncherExit,
    LauncherSignal,
    MonitoredBarrierFailure,
    Rec,
    WatchdogFailure,
    WatchdogTimeout,
)

MAX_LINE = 64 * 1024
RANK_PREFIX_RE = re.compile(r"^\[(?:rank|default)(\d+)\]:\s?")
GLOG_RE = re.compile(r"^\[(?P<sev>[EWIF])(?P<md>\d{4}) (?P<t>[\d:.]+) (?P<src>[^\]]+)\] ?")
PG_RE = re.compile(
    r"\[PG (?:ID )?(?P<pg>\d+)(?: PG GUID (?P<guid>[^\s(]{1,200}))?(?: ?\((?P<desc>[^)]{0,500})\))? Rank (?P<rank>\d+)\]"
)
RANK_BRACKET_RE = re.compile(r"\[Rank (\d+)\]")
WORK_RE = re.compile(
    r"WorkNCCL\(SeqNum=(?P<seq>\d+), OpType=(?P<op>\w+)(?:, NumelIn=(?P<ni>\d+), NumelOut=(?P<no>\d+))?"
    r", Timeout\(ms\)=(?P<to>\d+)\)(?: ran for (?P<ran>\d+) milliseconds)?"
)
FAILURE_RE = re.compile(
    r"failure detected by watchdog at work sequence id: (?P<seq>\d+) PG status: last enqueued work: (?P<e>-?\d+)"
    r"(?:, last started work: (?P<s>-?\d+)[^,]{0,200})?, last completed work: (?P<c>-?\d+)"
)
OLD_FAILURE_RE = re.compile(
    r"(?:Timeout at NCCL work|detected by watchdog at work): (?P<seq>-?\d+), last enqueued NCCL work: (?P<e>-?\d+), "
    r"last completed NCCL work: (?P<c>-?\d+)"
)
DUMP_SIGNAL_RE = re.compile(
    r"Received a dump signal due to a collective timeout from\s+(?:this local rank|rank (?P<from>\d+)).{0,1000}?"
    r"Last enqueued NCCL work: (?P<e>-?\d+), last completed NCCL work: (?P<c>-?\d+)"
)
DESYNC_LAG_RE = re.compile(r"ranks \[(?P<ranks>[\d, ]*)\] are the lagging ranks")
DESYNC_AT_RE = re.compile(r"Timeout at collective: (?P<op>\w+), #(?P<seq>\d+)")
MISMATCH_RE = re.compile(r"Rank (?P<rank>\d+) is running collective: (?P<fp>CollectiveFingerPrint\([^)]{0,4000}\))")
BARRIER_RE = re.compile(r"Ranks? (?P<ranks>[\d, ]+) failed to pass monitoredBarrier in (?P<ms>\d+) ms")
EXC_RE = re.compile(
    r"^(?P<type>(?:[\w.]+\.)?(?:\w*Error|\w*Exception|KeyboardInterrupt|SystemExit))(?::\s?(?P<msg>.*))?$"
)
FRAME_RE = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)')
SIGNAL_RE = re.compile(r"Sending process (?P<pid>\d+) closing signal (?P<sig>\w+)")
FAILED_RE = re.compile(r"failed \(exitcode: (?P<code>-?\d+)\) local_rank: (?P<lr>\d+) \(pid: (?P<pid>\d+)\)")
SUMMARY_KV_RE = re.compile(r"^\s*(?P<k>time|host|rank|exitcode|error_file|traceback)\s*:\s*(?P<v>.*)$")


def _strip(text: str) -> tuple[int | None, str]:
    m = RANK_PREFIX_RE.match(text)
    if m:
        return int(m.group(1)), text[m.end():]
    return None, text


def parse_torch_lines(lines: Iterable[tuple[int, str]], file: str) -> Iterator[Rec]:
    """Stream c10d, traceback and torchrun records out of (line number, text) pairs."""
    frames: dict[int | None, list[str]] = {}
    pending_last_error: dict[int | None, DistError] = {}
    awaiting_last_error: set[int | None] = set()
    summary: dict[str, str] | None = None
    summary_root = False
    summary_start = 0
    in_summary = False

    def flush_summary() -> Iterator[Rec]:
        nonlocal summary
        if summary and ("exitcode" in summary or "rank" in summary):
            yield _launcher_exit(summary, file, summary_start, summary_root)
        summary = None

    for lineno, raw in lines:
        text = raw[:MAX_LINE].rstrip("\r\n")
        if not text:
            continue
        # torchrun failure summary block --------------------------------------------------
        stripped = text.strip()
        if stripped.startswith("Root Cause (first observed failure)"):
            yield from flush_summary()
            in_summary, summary_root = True, True
            continue
        if stripped in ("Failures:", "Other Failures:"):
            yield from flush_summary()
            in_summary, summary_root = True, False
            continue
        if in_summary:
            if re.match(r"^\[\d+\]:$", stripped):
                yield from flush_summary()
                summary, summary_start = {}, lineno
                continue
            kv = SUMMARY_KV_RE.match(text)
            if kv and summary is not None:
                summary[kv.group("k")] = kv.group("v").strip()
                continue
            if stripped.startswith(("=", "-")):
                yield from flush_summary()
                if stripped.startswith("="):
                    in_summary = False
                continue
            if stripped == "<NO_OTHER_FAILURES>":
                continue
            yield from flush_summary()
            in_summary = False
        if "closing signal" in text:
            m = SIGNAL_RE.search(text)
            if m:
                yield LauncherSignal(file, lineno, text, int(m.group("pid")), m.group("sig"))
                continue
        if "failed (exitcode:" in text:
            m = FAILED_RE.search(text)
            if m:
                yield LauncherExit(file, lineno, text, None, int(m.group("lr")), int(m.group("code")),
                                   int(m.group("pid")), None, None, None, False)
                continue
        rank, body = _strip(text)
        g = GLOG_RE.match(body)
        sev = ts_text = None
        if g:
            sev, ts_text = g.group("sev"), f"{g.group('md')} {g.group('t')}"
            body = body[g.end():]
        pgm = PG_RE.search(body)
        pg = pgm.group("pg") if pgm else None
        if rank is None:
            if pgm:
                rank = int(pgm.group("rank"))
            else:
                rb = RANK_BRACKET_RE.search(body)
                if rb:
                    rank = int(rb.group(1))
        head = (file, lineno, text, rank, sev, ts_text, pg)
        if "WorkNCCL(" in body and "Watchdog caught collective operation timeout" in body:
            m = WORK_RE.search(body)
            if m and "terminated with exception" not in body:
                yield WatchdogTimeout(*head, int(m.group("seq")), m.group("op"),
                                      int(m.group("ni")) if m.group("ni") else None,
                                      int(m.group("no")) if m.group("no") else None,
                                      int(m.group("to")), int(m.group("ran")) if m.group("ran") else None)
            continue
        if "failure detected by watchdog" in body:
            m = FAILURE_RE.search(body)
            if m:
                yield WatchdogFailure(*head, int(m.group("seq")), int(m.group("e")), int(m.group("c")),
                                      int(m.group("s")) if m.group("s") else None)
            continue
        if "enqueued NCCL work" in body:
            m = DUMP_SIGNAL_RE.search(body)
            if m:
                yield DumpSignal(*head, int(m.group("from")) if m.group("from") else rank,
                                 int(m.group("e")), int(m.group("c")))
                continue
            m = OLD_FAILURE_RE.search(body)
            if m:
                yield WatchdogFailure(*head, int(m.group("seq")), int(m.group("e")), int(m.group("c")))
            continue
        if "lagging ranks" in body or "Timeout at collective:" in body:
            lag = DESYNC_LAG_RE.search(body)
            at = DESYNC_AT_RE.search(body)
            ranks = [int(x) for x in lag.group("ranks").replace(" ", "").split(",") if x] if lag else []
            yield DesyncReport(*head, ranks, int(at.group("seq")) if at else None, at.group("op") if at else None)
            continue
        if "Detected mismatch between collectives on ranks" in body:
            fps = MISMATCH_RE.findall(body)
            yield CollectiveMismatch(*head, [int(r) for r, _ in fps], [fp for _, fp in fps])
            continue
        if "failed to pass monitoredBarrier" in body:
            m = BARRIER_RE.search(body)
            if m:
                ranks = [int(x) for x in m.group("ranks").replace(" ", "").split(",") if x]
                yield MonitoredBarrierFailure(*head, ranks, int(m.group("ms")))
            continue
        if "Heartbeat monitor timed out" in body or "watchdog got stuck for" in body:
            yield HeartbeatTimeout(*head)
            continue
        # tracebacks -------------------------------------------------------------------------
        fm = FRAME_RE.match(body)
        if fm:
            frames.setdefault(rank, []).append(f"{fm.group('file')}:{fm.group('line')} in {fm.group('func')}")
            continue
        if body.startswith("Traceback (most recent call last)"):
            frames[rank] = []
            continue
        if body.strip() == "Last error:":
            if rank in pending_last_error:
                awaiting_last_error.add(rank)
            continue
        if rank in awaiting_last_error:
            awaiting_last_error.discard(rank)
            err = pending_last_error.pop(rank, None)
            if err is not None:
                err.last_error = body.strip()
            continue
        if rank in pending_last_error and body.startswith("nccl"):
            continue  # "ncclInvalidUsage: This usually reflects ..." between the exception and "Last error:"
        em = EXC_RE.match(body.strip()) if not body.startswith(" ") else None
        if em and (frames.get(rank) or "DistBackendError" in em.group("type") or "NCCL" in (em.group("msg") or "")):
            err = DistError(*head, em.group("type"), (em.group("msg") or "").strip(), None,
                            list(frames.pop(rank, [])))
            yield err
            if "NCCL error" in body or "DistBackendError" in em.group("type"):
                pending_last_error[rank] = err
            continue
    yield from flush_summary()


def _launcher_exit(kv: dict[str, str], file: str, lineno: int, root: bool) -> LauncherExit:
    rank = local = code = pid = None
    rm = re.match(r"(-?\d+)(?: \(local_rank: (\d+)\))?", kv.get("rank", ""))
    if rm:
        rank = int(rm.group(1))
        local = int(rm.group(2)) if rm.group(2) else None
    em = re.match(r"(-?\d+)(?: \(pid: (\d+)\))?", kv.get("exitcode", ""))
    if em:
        code = int(em.group(1))
        pid = int(em.group(2)) if em.group(2) else None
    text = "; ".join(f"{k}: {v}" for k, v in kv.items())
    return LauncherExit(file, lineno, text, rank, local, code, pid, kv.get("host"), kv.get("time"),
                        kv.get("traceback"), root)
