"""NCCL WARN lines judged by the knowledge base of failures (``ncclscope.nccl.failures``).

Inputs: ``nccl_warn`` events and the ``nccl_backtrace`` lines that follow them in the same file
(NCCL's return chain, ``misc/socket.cc:567 -> 2``), the ``NET/... Using`` lines of a multi-host job,
the settings (those the knowledge base calls traps), and the NCCL version each process printed.

- A WARN whose text an entry knows becomes one finding per entry (every rank that printed it):
  the entry's cause, its fix and documentation link, the first line as evidence.
- A WARN no entry knows, followed by a non-zero return chain, still becomes an ``error`` finding
  that quotes it, names where the chain starts, and says it is not in the knowledge base.
- Entries of kind ``config`` are the config detector's, which names the setting, unless the text
  names no setting the job set (then nobody else would report it).
- An entry that argues for a verdict (``Entry.verdict``: the host, container, driver or fabric set up
  wrong -> config_error; a network failure -> crash) gives its finding that verdict, with no culprit
  rank (``data["culprits"]``: the setup or the link failed, not a rank's code). The time line
  (``rules.facts``) puts a network WARN among the failures, so the earliest failure wins and the
  echoes after it (timeouts, aborts, "remote process exited") do not.
- A socket connection that failed (refused, timed out) in a multi-host job that chose lo or docker0:
  the interface choice is the cause (config_error, ``data["explained_by"]``).
- A warning of torch or CUDA the knowledge base knows as a cause (``TorchWarning`` events: a GPU whose CUDA
  capability the installed torch build has no kernels for): one finding per entry, arguing for the entry's
  verdict when the job failed.
- A transport's size check that a desync trips too (``DESYNC_TOO``: IB's "collective mismatch error"): the
  entry's config error only while the ranks' own reports show no mismatch (PyTorch's DETAIL check, a backend's
  mismatch abort); with one, it argues for nothing and the desync detector decides.
- A WARN whose entry names settings that cause it (``Entry.settings``: NCCL_TOPO_FILE before
  "Attribute arch of node cpu not found"), after the job set one: a config error naming the setting.
- NCCL's kernel not found ('named symbol not found') on Blackwell GPUs only (the benchmark's device lines): an NCCL
  built without their architecture, a config error.
- The WARN a process printed right before NCCL's ``commReclaim: cleanup comm ... failed in destroy/abort`` (no line
  of that process between: ``rules.reclaim``), and that line: the clean-up's own failure (NVLS or registered memory
  freed twice), one note arguing for nothing.
- A communicator whose init never completed, each stuck rank's last NCCL line a known set-up step (NVLS multicast
  set-up): a note naming where init stopped.
Other findings argue for no verdict: the crash and hang detectors decide what happened; these say why.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from ..model import EventKind, Evidence, Finding, FindingKind, LogEvent, Run, Setting, Severity, Verdict
from ..nccl.failures import MAX_TEXT, Area, Entry, EntryKind, EntryVerdict, classify, classify_in_area
from ..nccl.gids import shown_routable
from ..rules.chain import warn_chains as _chains
from ..rules.exits import FailureKind
from ..rules.facts import failures_of_run, in_teardown, teardown_of_run
from ..rules.reclaim import reclaim_warns
from ..sources.nccl_tests import device_gpu

MAX_QUOTE = 240
SETTING_RE = re.compile(r"\bNCCL_[A-Z0-9_]{2,60}\b")
CONNECT_RE = re.compile(r"(?i)\bconnect\b")  # a connection this rank tried to make
# size checks of a transport that a desync trips as well as a setup difference between nodes
DESYNC_TOO = frozenset({"ib-size-mismatch"})
KERNEL_MISSING = "nccl-cuda-named-symbol"  # NCCL looked up one of its kernels and CUDA did not find it
# GPUs NCCL has kernels for only from 2.25, and only when built for their architecture: data-centre Blackwell (sm_100 /
# sm_103), GeForce / RTX PRO Blackwell (sm_120) and GB10 (sm_121), as nccl-tests' device lines name them
BLACKWELL_GPU_RE = re.compile(r"\b(?:GB|B)(?:200|300)\b|\bGB10\b|RTX 50[5-9]0|RTX PRO \d{4} Blackwell")
NUMBER_RE = re.compile(r"0x[0-9a-fA-F]+|\d+")
SEVERITY = {"info": Severity.INFO, "warning": Severity.WARNING, "error": Severity.ERROR, "critical": Severity.CRITICAL}
UNKNOWN_HINT = ("Not in ncclscope's knowledge base. The return chain after the WARN shows where NCCL failed "
                "(its first line is the failing call); read the WARN lines before it on the same rank, and "
                "search the message in NCCL's GitHub issues.")


@dataclass
class _Group:
    """Every occurrence of one known entry (or of one unknown WARN shape)."""

    entry: Entry | None
    first: LogEvent
    ranks: set[int] = field(default_factory=set)
    count: int = 0
    chain: tuple[tuple[str, int, Evidence], ...] = ()
    evidence: list[Evidence] = field(default_factory=list)


def detect(run: Run) -> list[Finding]:
    groups: dict[str, _Group] = {}
    chains = _chains(run.events)
    settings = run.job.settings
    down = teardown_of_run(run)
    teardown: list[LogEvent] = []
    reclaim = reclaim_warns(run.events)
    cleanup: list[LogEvent] = []
    for i, w in enumerate(run.events):
        if w.kind != EventKind.NCCL_WARN:
            continue
        if in_teardown(w, down):
            teardown.append(w)
            continue
        if i in reclaim:
            cleanup.append(w)
            continue
        entry = classify(_text(w))
        chain = chains.get(i, ())
        if entry is None:
            if not any(code != 0 for _, code, _ in chain):
                continue
            src = w.data.get("source")  # one format string in NCCL's source: one shape of message
            key = "?" + (src if isinstance(src, str) and src else NUMBER_RE.sub("#", w.text.strip())[:MAX_QUOTE])
        elif entry.kind == EntryKind.CONFIG and _config_reports(w.text, settings):
            continue
        else:
            key = entry.id
        _add(groups, key, entry, w, chain)
    failed = _job_failed(run)
    mismatch = _mismatch_reported(run)
    findings = [_built_without_arch(_finding(g, failed, settings, mismatch), run) for g in groups.values()]
    chosen = _environment(run)
    if chosen:
        findings = [_explained_by(f, chosen[0]) for f in findings]
    return (findings + chosen + _teardown(teardown, len(down)) + _cleanup(cleanup) + _warnings(run, failed)
            + _init_stopped(run) + _settings(run) + _releases(run))


def _cleanup(warns: list[LogEvent]) -> list[Finding]:
    """The WARNs of a communicator's clean-up that failed (``rules.reclaim``): one warning, no verdict; the
    communicator was being destroyed or aborted, so they say how it was freed, not that the job failed."""
    if not warns:
        return []
    ranks = tuple(sorted({w.rank for w in warns if w.rank is not None}))
    return [Finding(
        kind=FindingKind.NOTE, severity=Severity.WARNING,
        message=f"{len(warns)} NCCL WARN line(s) of a communicator's clean-up (commReclaim failed in destroy/abort); "
        f"first: \"{_quote(warns[0].text)}\": the clean-up's own failure, not the job's",
        ranks=ranks, evidence=tuple(w.evidence for w in warns[:3]),
        hint="A failure while freeing the communicator (ncclCommDestroy / ncclCommAbort), often NVLS or registered "
        "memory a plugin or allocator already released. Harmless to results; report it with the NCCL release if it "
        "repeats.", data={"entry": "comm-reclaim-cleanup", "count": len(warns)})]


def _built_without_arch(f: Finding, run: Run) -> Finding:
    """NCCL's own kernel not found (``KERNEL_MISSING``: 'named symbol not found') where every GPU the benchmark's
    device lines name is a Blackwell one (sm_100 / sm_103 / sm_12x, which NCCL has code for only from 2.25 and only
    when built for them): the libnccl in use was built without their architecture (an NVCC_GENCODE list that stops at
    sm_90, an older wheel or image), an installation the user chose: a config error, no culprit."""
    if f.data.get("entry") != KERNEL_MISSING or f.verdict is Verdict.CONFIG_ERROR:
        return f
    gpus = {g for e in run.events if e.kind == "RankTagged" and (g := device_gpu(e.text)) is not None}
    if not gpus or not all(BLACKWELL_GPU_RE.search(g) for g in gpus):
        return f
    named = ", ".join(sorted(gpus)[:2])
    return replace(f, verdict=Verdict.CONFIG_ERROR,
                   message=f"{f.message} The GPUs are {named} (Blackwell, sm_100+): this NCCL has no kernels built for "
                   "their architecture.", data={**f.data, "culprits": []})


def _teardown(warns: list[LogEvent], processes: int) -> list[Finding]:
    """The proxy and socket WARNs of processes that were destroying their communicators (a Close their proxy failed:
    ``rules.facts.teardown_processes``): one warning, no verdict; they are how those processes exited, not a failure."""
    if not warns:
        return []
    ranks = tuple(sorted({w.rank for w in warns if w.rank is not None}))
    return [Finding(
        kind=FindingKind.NOTE, severity=Severity.WARNING,
        message=f"{len(warns)} NCCL proxy / socket WARN line(s) of {processes} process(es) tearing down their "
        f"communicators (their proxy failed to Close a connection): teardown noise, not a failure; first: "
        f"\"{_quote(warns[0].text)}\"", ranks=ranks,
        hint="The processes were exiting when their proxies lost their peers' sockets. Call "
        "dist.destroy_process_group() on every rank (after a barrier) before exit to make the teardown orderly.",
        evidence=tuple(w.evidence for w in warns[:3]), data={"entry": "proxy-close-teardown", "count": len(warns)})]


def _init_stopped(run: Run) -> list[Finding]:
    """A communicator whose init never completed on some ranks, whose last NCCL line on each of them is a set-up
    step the knowledge base knows (``nccl_net_nvls``: NVLS multicast set-up) with no WARN after it: one note per
    entry naming the step where init stopped (the hang detector says that init hung; this says where)."""
    stuck = {c.members.get(r, r) for c in run.communicators for r in c.init_started - c.init_complete}
    if not stuck:
        return []
    last: dict[int, LogEvent] = {}
    for e in run.events:
        if e.rank in stuck and (e.kind.startswith("nccl_net_") or e.kind in (EventKind.NCCL_WARN, EventKind.NCCL_BACKTRACE)):
            last[e.rank] = e  # events are in file order
    groups: dict[str, _Group] = {}
    for e in last.values():
        entry = classify(e.text) if e.kind == EventKind.NCCL_NET_NVLS else None
        if entry is not None:
            _add(groups, entry.id, entry, e, ())
    return [Finding(kind=FindingKind.NOTE, severity=SEVERITY[g.entry.severity],
                    message=f"init stopped {_who(g.ranks, g.count)} after \"{_quote(g.first.text)}\": {g.entry.cause}",
                    ranks=tuple(sorted(g.ranks)), hint=f"{g.entry.fix} ({g.entry.link})", evidence=tuple(g.evidence),
                    data={"entry": g.entry.id, "area": g.entry.area, "cause": g.entry.cause, "fix": g.entry.fix,
                          "link": g.entry.link, "releases": list(g.entry.releases), "count": g.count})
            for g in groups.values() if g.entry is not None]


def _warnings(run: Run, failed: bool) -> list[Finding]:
    """Warnings torch or CUDA printed that the knowledge base knows as a cause (``TorchWarning`` events: torch's
    'GPU with CUDA capability sm_89 is not compatible with the current PyTorch installation'): one finding per
    entry, with the entry's verdict (no culprit rank) when the job failed, else a warning of what will fail; an
    entry of kind note (torch 2.7.0's non-blocking mode, a release with a known hang) is a note, arguing for nothing."""
    groups: dict[str, _Group] = {}
    for ev in run.events:
        if ev.kind == "TorchWarning":
            entry = classify(ev.text)
            if entry is not None:
                _add(groups, entry.id, entry, ev, ())
    out = []
    for g in groups.values():
        e = g.entry
        if e is None:
            continue
        verdict = Verdict(e.verdict) if failed and e.verdict else None
        kind = FindingKind.NOTE if e.kind == EntryKind.NOTE else (
            FindingKind.CONFIG if e.verdict == EntryVerdict.CONFIG_ERROR else FindingKind.ERROR)
        out.append(Finding(
            kind=kind, severity=SEVERITY[e.severity] if failed or e.kind == EntryKind.NOTE else Severity.WARNING,
            message=f"torch {'said' if e.kind == EntryKind.NOTE else 'warned'} {_who(g.ranks, g.count)}: \"{_quote(g.first.text)}\": {e.cause}",
            ranks=tuple(sorted(g.ranks)), hint=f"{e.fix} ({e.link})", evidence=tuple(g.evidence), verdict=verdict,
            data={"entry": e.id, "area": e.area, **({"culprits": []} if verdict else {}), "cause": e.cause,
                  "fix": e.fix, "link": e.link, "releases": list(e.releases), "warn": _quote(g.first.text),
                  "count": g.count}))
    return out


def _explained_by(f: Finding, chosen: Finding) -> Finding:
    """A socket connection that failed (refused, timed out, aborted) in a multi-host job that chose
    lo or docker0: the interface choice is the cause, a config error naming the interface."""
    if f.data.get("area") != "socket" or not f.data.get("entry") or f.verdict is Verdict.CONFIG_ERROR:
        return f
    if not CONNECT_RE.search(str(f.data.get("warn", ""))):
        return f
    return replace(f, verdict=Verdict.CONFIG_ERROR, message=f"{chosen.message}; then {f.message}",
                   hint=chosen.hint, evidence=f.evidence + chosen.evidence[:1],
                   data={**f.data, "culprits": [], "explained_by": chosen.data.get("entry")})


def _text(w: LogEvent) -> str:
    """The WARN as the entries read it: its source location, then its message."""
    src = w.data.get("source")
    return f"{src} {w.text}" if isinstance(src, str) and src else w.text


def _config_reports(text: str, settings: Mapping[str, Setting]) -> bool:
    """The config detector reports a config entry when the text names a setting ('X was set', or one
    the job set)."""
    return " was set" in text or any(n in settings for n in SETTING_RE.findall(text))


def _add(groups: dict[str, _Group], key: str, entry: Entry | None, w: LogEvent,
         chain: tuple[tuple[str, int, Evidence], ...]) -> None:
    g = groups.get(key)
    if g is None:
        g = groups[key] = _Group(entry, w, chain=chain)
    g.count += 1
    if w.rank is not None:
        g.ranks.add(w.rank)
    if len(g.evidence) < 3 and w.evidence not in g.evidence:
        g.evidence.append(w.evidence)


def _job_failed(run: Run) -> bool:
    """Something failed besides the WARNs: a failure on the time line or a non-zero exit. A training
    that goes on past a WARN of a helper thread (the bootstrap's remote allocator) was not failed by it."""
    return bool(failures_of_run(run)) or run.job.exit_code not in (None, 0) or any(
        x.exitcode not in (None, 0) for x in run.exits)


def _mismatch_reported(run: Run) -> bool:
    """The ranks themselves reported a collective mismatch: PyTorch's DETAIL check or a backend's abort on one."""
    return any(e.kind == EventKind.COLLECTIVE_MISMATCH for e in run.events) or any(
        f.kind is FailureKind.MISMATCH for f in failures_of_run(run))


def _argues(e: Entry, failed: bool, causing: list[Setting], mismatch: bool = False) -> Verdict | None:
    """The verdict the entry argues for here: a config error stands on its own (NCCL refused the
    setup), and so does a failure on the data path (an IB completion error, a proxy failure: fatal to
    the communicator); a socket error only when the job failed, since the bootstrap's helper threads
    log theirs and training goes on. A size check a desync trips too (``DESYNC_TOO``) argues for nothing
    when the ranks reported a mismatch (``mismatch``)."""
    if causing:  # the job set what the entry says causes this message
        return Verdict.CONFIG_ERROR
    if e.verdict is None or (mismatch and e.id in DESYNC_TOO):
        return None
    if e.verdict == EntryVerdict.CRASH and e.area == Area.SOCKET and not failed:
        return None
    return Verdict(e.verdict)


def _finding(g: _Group, failed: bool, settings: Mapping[str, Setting], mismatch: bool = False) -> Finding:
    who = _who(g.ranks, g.count)
    quote = _quote(g.first.text)
    chain = [f"{src} -> {code}" for src, code, _ in g.chain]
    evidence = list(g.evidence)
    if g.chain:
        evidence.insert(1, g.chain[0][2])
    e = g.entry
    if e is None:
        failing = next((f"{src} -> {code}" for src, code, _ in g.chain if code != 0), "")
        return Finding(
            kind=FindingKind.ERROR, severity=Severity.ERROR,
            message=f"NCCL WARN {who}, not in the knowledge base: \"{quote}\" (return chain from {failing})",
            ranks=tuple(sorted(g.ranks)), hint=UNKNOWN_HINT, evidence=tuple(evidence),
            data={"entry": None, "warn": quote, "chain": chain, "count": g.count})
    causing = [settings[n] for n in e.settings if n in settings and not _setting_cleared(n, g.first.text)]
    verdict = _argues(e, failed, causing, mismatch)
    if causing:
        evidence += [s.evidence for s in causing if s.evidence is not None and s.evidence not in evidence]
    set_by = "".join(f"{s.name}={s.value}, then " for s in causing)
    return Finding(
        kind=FindingKind.ERROR if e.kind != EntryKind.NOTE else FindingKind.NOTE, severity=SEVERITY[e.severity],
        message=f"{set_by}NCCL WARN {who}: \"{quote}\": {e.cause}",
        ranks=tuple(sorted(g.ranks)), hint=f"{e.fix} ({e.link})", evidence=tuple(evidence),
        verdict=verdict,
        data={"entry": e.id, "area": e.area, **({"culprits": []} if verdict else {}),
              **({"settings": [s.name for s in causing]} if causing else {}), "cause": e.cause, "fix": e.fix, "link": e.link,
              "releases": list(e.releases), "warn": quote, "chain": chain, "count": g.count})


def _setting_cleared(name: str, warn: str) -> bool:
    """The WARN itself shows the setting did its job: the GID pair an IB completion error prints (NCCL 2.21+) is
    routable (``nccl.gids``), so the NCCL_IB_GID_INDEX the job set picked a usable GID and the retry-exceeded error is
    the fabric's or the peer's. Older forms print no GID: the setting stays a suspect there."""
    return name == "NCCL_IB_GID_INDEX" and shown_routable(warn)


def _environment(run: Run) -> list[Finding]:
    """An interface choice that only breaks a job spanning hosts (lo, docker0): one finding per entry."""
    if len(run.job.hosts) < 2:
        return []
    groups: dict[str, _Group] = {}
    told: dict[str, Entry | None] = {}  # NCCL's message (the line after its head) -> its entry: ranks repeat them
    for e in run.events:
        if e.kind.startswith("nccl_net_"):
            text = e.evidence.text
            cut = text.find(INFO_MARK)
            msg = (text[cut + len(INFO_MARK):] if cut >= 0 else text)[:MAX_TEXT]
            entry = told[msg] if msg in told else classify_in_area(msg, "environment")  # its few entries searched first
            if len(told) < MAX_TOLD:
                told[msg] = entry
            if entry is not None:
                _add(groups, entry.id, entry, e, ())
    return [_finding(g, False, {}) for g in groups.values()]


INFO_MARK = "NCCL INFO "
MAX_TOLD = 65536  # distinct messages remembered: a bound whatever the input


def _settings(run: Run) -> list[Finding]:
    """Settings the knowledge base knows as traps (NCCL_P2P_LEVEL=LOC), in NCCL's own words."""
    out = []
    for s in run.job.settings.values():
        entry = classify(f"{s.name} set by environment to {s.value}")
        if entry is not None and entry.area == Area.ENVIRONMENT:
            out.append(Finding(kind=FindingKind.NOTE, severity=SEVERITY[entry.severity],
                               message=f"{s.name}={s.value}: {entry.cause}", hint=f"{entry.fix} ({entry.link})",
                               evidence=(s.evidence,) if s.evidence else (),
                               data={"entry": entry.id, "area": entry.area, "cause": entry.cause, "fix": entry.fix,
                                     "link": entry.link, "releases": list(entry.releases), "settings": [s.name]}))
    return out


def _releases(run: Run) -> list[Finding]:
    """NCCL releases with known problems, one finding per release (the job's version too: a bare ``NCCL version`` line
    of rank 0 or a benchmark names no process)."""
    out = []
    versions = set(run.job.nccl_versions.values()) | ({run.job.nccl_version} if run.job.nccl_version else set())
    for version in sorted(versions):
        entry = classify(f"NCCL version {version}")
        if entry is not None and entry.area == Area.RELEASE:
            out.append(Finding(kind=FindingKind.NOTE, severity=SEVERITY[entry.severity],
                               message=f"NCCL {version} has a known problem: {entry.cause}",
                               hint=f"{entry.fix} ({entry.link})", evidence=_version_line(run, version),
                               data={"entry": entry.id, "area": entry.area, "cause": entry.cause, "fix": entry.fix,
                                     "link": entry.link, "releases": list(entry.releases)}))
    return out


def _version_line(run: Run, version: str) -> tuple[Evidence, ...]:
    """The first line that printed NCCL ``version``."""
    line = run.job.version_lines.get(version)
    return (line,) if line is not None else ()


def _who(ranks: set[int], count: int) -> str:
    if not ranks:
        return f"({count} line{'s' if count > 1 else ''})"
    rs = sorted(ranks)
    shown = ", ".join(map(str, rs[:8])) + (f" and {len(rs) - 8} more" if len(rs) > 8 else "")
    return f"on rank{'s' if len(rs) > 1 else ''} {shown}"


def _quote(text: str) -> str:
    t = " ".join(text.split())
    return t if len(t) <= MAX_QUOTE else t[:MAX_QUOTE - 3] + "..."
