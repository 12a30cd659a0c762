"""NCCL's diagnostics lines (2.31+): ``<host>:<pid> NCCL DIAG <text>``, to typed results (``diag_model``).

The forms, as NCCL's format strings print them (NVIDIA/nccl 2.31.2-1, commit 8898068; 2.32.3-1, commit 12df1a1):

- the head: ``rasDiagnosticsFormatLine`` (``src/ras/diagnostics.cc``: ``"%s:%d NCCL DIAG %s"``, host and pid of the
  printing process) for RAS diagnostics; ``DIAG_PRINT`` (``diagnostics_log.h``) for active ones, same head;
- a report: ``=== RAS Diagnostics ===`` / ``=== NCCL Diagnostics ===``, result lines, then ``RAS diagnostics
  completed in 12.3 ms across 8 ranks`` (``RAS peers`` for an on-demand report) / ``NCCL diagnostics completed in
  245.3 ms across 8 ranks``; a summary that failed: ``ERROR: diagnostics summary failed (3)``;
- a result: ``[OK]   `` or ``[INFO] `` (``RAS_DIAG_TAG_*``, padded to one width), the check's name, ``: `` and its
  words (``src/ras/diagnostics_gpu.cc``, ``diagnostics_env.cc``, ``diagnostics_checks_common.cc``,
  ``src/diagnostics/p2p.cc``): ``GPU inventory: count mismatch across 8 ranks in comm 0x1234, rank(s) {5} differ from
  rank 0 (8)``, ``NCCL environment: NCCL_DEBUG=WARN on rank(s) {4,5,6,7}``, ``ECC: uncorrected volatile errors on
  rank(s) {3} (worst=2) across 8 ranks in comm 0x1234``, ``NVLink: inactive link(s) on rank(s) {2} across ...``,
  ``p2p: write mismatch srcRank=1 ... dstRank=3 ... path=NVL handle=CUMEM_POSIX_FD expected=0x.. got=0x.. ...``.
  A rank set shows at most 8 ranks: ``{0,1,2,3,4,5,6,7,...} (N=12)``.

``parse_diag_line`` is pure and handles one line (``nccl_log`` hands it every line holding ``NCCL DIAG``); a line
of another shape gives None. ``results_of`` turns a run's records into its results, each line once.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

from ..diag_model import DiagCheck, DiagLevel, DiagProblem, DiagResult, DiagSource
from .lines import DIAG_HEAD_RE, strip_tool_prefixes
from .records import NcclRec

DIAG_MARK = "NCCL DIAG "
MAX_DIAG_LINE = 4096  # NCCL formats a line into 1,024 bytes (2,048 with its head): longer is not NCCL's

TAG_RE = re.compile(r"^\[(?P<tag>[A-Z]{2,8})\]\s*(?P<msg>.*)$")
HEADER_RE = re.compile(r"^=== (?P<which>RAS|NCCL) Diagnostics ===$")
DONE_RE = re.compile(r"^(?P<which>RAS|NCCL) diagnostics completed in [\d.]+ ms across (?P<n>\d+) (?:ranks|RAS peers)$")
SUMMARY_FAILED_RE = re.compile(r"^ERROR: diagnostics summary failed \((?P<code>-?\d+)\)$")
CHECK_RE = re.compile(r"^(?P<check>[A-Za-z][\w /-]{0,60}?): (?P<rest>.*)$")
COMM_RE = re.compile(r"\bcomm (?P<comm>0x[0-9a-fA-F]{1,16})")
ACROSS_RE = re.compile(r"\bacross (?:(?P<some>\d+) of )?(?P<n>\d+) ranks\b")
RANK_SET_RE = re.compile(r"rank\(s\) \{(?P<list>[\d,]*?)(?P<cut>,?\.\.\.)?\}(?: \(N=(?P<total>\d+)\))?")
DIFFER_RE = re.compile(r"differ from rank (?P<ref>\d+) \((?P<value>[^()]*)\)")
WORST_RE = re.compile(r"\(worst=(?P<worst>\d+)\)")
ENV_HEAD_RE = re.compile(r"^mismatch across (?P<n>\d+) ranks in comm (?P<comm>0x[0-9a-fA-F]+) for (?P<key>.+)$")
ENV_VALUE_RE = re.compile(r"^(?P<key>[^=\s]{1,256})=(?P<value>.*) on rank\(s\) \{")
ENV_SUMMARY_RE = re.compile(r"^(?P<count>\d+) NCCL_\* env var\(s\) differ across ranks")
P2P_COUNTS_RE = re.compile(r"^(?:all (?P<all>\d+)|(?P<passed>\d+)/(?P<tested>\d+)) directed GPU P2P edges verified")
P2P_EDGE_RE = re.compile(r"srcRank=(?P<src>\d+) .*?dstRank=(?P<dst>\d+) .*?path=(?P<path>\S+)")
P2P_SETUP_RE = re.compile(r"^setup failed on rank (?P<rank>\d+) result=(?P<code>-?\d+)$")
INCOMPLETE_RE = re.compile(r"diagnostics incomplete, gathered (?P<got>\d+)/(?P<n>\d+) ranks|^incomplete for comm ")

CHECKS = {c.value: c for c in DiagCheck}
LEVELS = {"OK": DiagLevel.OK, "INFO": DiagLevel.INFO, "WARN": DiagLevel.WARN, "WARNING": DiagLevel.WARN,
          "FAIL": DiagLevel.FAIL, "FAILED": DiagLevel.FAIL, "ERROR": DiagLevel.ERROR}
P2P_FAILURES = ("destination buffer unavailable", "local CUDA setup failed", "peer-memory import failed",
                "write mismatch", "read mismatch", "topology check failed", "launch/check failed")


@dataclass(slots=True)
class NcclDiag(NcclRec):
    """One ``NCCL DIAG`` line (or one answer of the RAS client protocol, read by ``sources.ras``), read."""

    result: DiagResult


@dataclass(slots=True)
class NcclCudaDriver(NcclRec):
    """``cudaDriverVersion 13000``: the CUDA version the process's driver supports (``cuDriverGetVersion``), which
    NCCL prints at init (``src/misc/cudawrap.cc``, 2.13.4+) and its RAS diagnostics compare across ranks."""

    version: int

    @property
    def cuda(self) -> str:
        """``13000`` as ``nvidia-smi`` prints it: ``13.0``."""
        return f"{self.version // 1000}.{self.version % 1000 // 10}"


CUDA_DRIVER_HEAD = "cudaDriverVersion "
CUDA_DRIVER_RE = re.compile(r"^cudaDriverVersion (?P<v>\d{4,7})$")


def parse_cuda_driver(msg: str, base: tuple[str, int, str, str, int, int, float | None]) -> NcclCudaDriver | None:
    """An INFO message ``cudaDriverVersion 12090`` (``base``: the line's file, number, text and process)."""
    m = CUDA_DRIVER_RE.match(msg)
    return NcclCudaDriver(*base, int(m.group("v"))) if m else None


def parse_diag_line(text: str, file: str = "", lineno: int = 0) -> NcclDiag | None:
    """One line holding ``NCCL DIAG`` to its record, or None when it is no diagnostics line NCCL prints."""
    if DIAG_MARK not in text or len(text) > MAX_DIAG_LINE:
        return None
    body = strip_tool_prefixes(text)[1].lstrip()  # behind a launcher's prefix ("[rank0]:", "[1,0]<stdout>:")
    m = DIAG_HEAD_RE.match(body)  # the head: "node042:12345 NCCL DIAG ", or "NCCL DIAG " (a pasted report)
    if m is None:
        return None
    host, pid = m.group("host") or "", int(m.group("pid") or 0)
    result = read_body(body[m.end():].strip())
    if result is None:
        return None
    return NcclDiag(file, lineno, text, host, pid, 0, None,
                    replace(result, host=host, pid=pid, file=file, line=lineno, text=text.rstrip("\r\n")))


def read_body(body: str) -> DiagResult | None:
    """What follows ``NCCL DIAG ``: a header, a completion line, a failed summary, or a tagged result."""
    h = HEADER_RE.match(body)
    if h is not None:
        return DiagResult(_source(h.group("which")), DiagLevel.NONE, DiagCheck.REPORT, DiagProblem.NONE, body)
    d = DONE_RE.match(body)
    if d is not None:
        return DiagResult(_source(d.group("which")), DiagLevel.NONE, DiagCheck.REPORT, DiagProblem.NONE, body,
                          nranks=int(d.group("n")))
    f = SUMMARY_FAILED_RE.match(body)
    if f is not None:
        return DiagResult(DiagSource.RAS, DiagLevel.ERROR, DiagCheck.REPORT, DiagProblem.FAILED, body,
                          value=f.group("code"))
    t = TAG_RE.match(body)
    if t is None:
        return None
    level = LEVELS.get(t.group("tag"))
    if level is None:
        return None
    return read_result(level, t.group("msg").strip())


def read_result(level: DiagLevel, msg: str) -> DiagResult:
    """A tagged line's words: which check, and what it says."""
    if msg.startswith("transport detect returned"):
        return DiagResult(DiagSource.ACTIVE, level, DiagCheck.TRANSPORT, DiagProblem.FAILED, msg,
                          value=msg.rsplit(" ", 1)[-1])
    c = CHECK_RE.match(msg)
    check = CHECKS.get(c.group("check"), DiagCheck.OTHER) if c is not None else DiagCheck.OTHER
    rest = c.group("rest") if c is not None else msg
    source = DiagSource.ACTIVE if check is DiagCheck.P2P else DiagSource.UNKNOWN if check is DiagCheck.OTHER \
        else DiagSource.RAS  # the RAS checks are RAS diagnostics' alone; another check's report says whose it is
    base = DiagResult(source, level, check, DiagProblem.NONE, msg, comm=_comm(rest), nranks=_nranks(rest))
    if check is DiagCheck.P2P:
        return _p2p(base, rest)
    if check is DiagCheck.NCCL_ENV:
        return _env(base, rest)
    if level is DiagLevel.OK:
        return base
    return _problem(base, check, rest)


def _problem(base: DiagResult, check: DiagCheck, rest: str) -> DiagResult:
    """An [INFO] (or worse) line of the RAS checks: what it reports, the ranks and values it names."""
    ranks, total = _rank_set(rest)
    b = replace(base, ranks=ranks, ranks_total=total)
    i = INCOMPLETE_RE.search(rest)
    if i is not None:
        return replace(b, problem=DiagProblem.INCOMPLETE, nranks=int(i.group("n")) if i.group("n") else b.nranks,
                       value=i.group("got"))
    if "mismatch across" in rest:
        d = DIFFER_RE.search(rest)
        key = rest.split(" mismatch across", 1)[0] if " mismatch across" in rest else None  # "count", "model",
        # "link-count"; none for a version ("mismatch across 8 ranks ...")
        return replace(b, problem=DiagProblem.DIFFERS, key=key, reference_rank=int(d.group("ref")) if d else None,
                       value=d.group("value") if d else None)
    if check is DiagCheck.ECC and "volatile errors " in rest and " on rank(s) " in rest:
        w = WORST_RE.search(rest)
        problem = DiagProblem.ECC_CORRECTED if rest.startswith("corrected") else DiagProblem.ECC_UNCORRECTED
        return replace(b, problem=problem, value=w.group("worst") if w else None)
    if check is DiagCheck.NVLINK and rest.startswith("inactive link"):
        return replace(b, problem=DiagProblem.LINK_INACTIVE)
    if check is DiagCheck.NVLINK and rest.startswith("inconsistent link speeds"):
        return replace(b, problem=DiagProblem.LINK_SPEED)
    if "unavailable" in rest or "no driver installed" in rest:
        return replace(b, problem=DiagProblem.UNAVAILABLE)
    return replace(b, problem=DiagProblem.NOTICE)


def _env(base: DiagResult, rest: str) -> DiagResult:
    """``NCCL environment:`` lines: a differing variable's head (``mismatch across 8 ranks in comm 0x.. for NAME``),
    one line per value (``NAME=VALUE on rank(s) {..}``, ``(unset)`` where a rank lacks it), the count of variables
    that differ, or that some rank's variables did not fit (``had >16384 bytes``)."""
    if base.level is DiagLevel.OK:
        return base
    h = ENV_HEAD_RE.match(rest)
    if h is not None:
        return replace(base, problem=DiagProblem.DIFFERS, key=h.group("key"), comm=h.group("comm"),
                       nranks=int(h.group("n")))
    v = ENV_VALUE_RE.match(rest)
    if v is not None:
        ranks, total = _rank_set(rest[v.end() - len("rank(s) {"):])
        return replace(base, problem=DiagProblem.DIFFERS, key=v.group("key"), value=v.group("value"), ranks=ranks,
                       ranks_total=total)
    s = ENV_SUMMARY_RE.match(rest)
    if s is not None:
        return replace(base, problem=DiagProblem.DIFFERS, value=s.group("count"))
    if "bytes of NCCL_* env vars" in rest or INCOMPLETE_RE.search(rest):
        return replace(base, problem=DiagProblem.INCOMPLETE)
    return replace(base, problem=DiagProblem.NOTICE)


def _p2p(base: DiagResult, rest: str) -> DiagResult:
    """Active diagnostics' ``p2p:`` lines: the count of directed pairs verified, a pair that failed (with its ranks,
    path and reason), a set-up that failed on a rank, the check itself failing, a notice."""
    n = P2P_COUNTS_RE.match(rest)
    if n is not None:
        passed = int(n.group("all") or n.group("passed"))
        tested = int(n.group("all") or n.group("tested"))
        problem = DiagProblem.NONE if passed == tested else DiagProblem.P2P_FAILED
        return replace(base, problem=problem, value=f"{passed}/{tested}", nranks=None)
    if rest.startswith(P2P_FAILURES):
        e = P2P_EDGE_RE.search(rest)
        phase = next(p for p in P2P_FAILURES if rest.startswith(p))
        return replace(base, problem=DiagProblem.P2P_FAILED, key=phase, value=e.group("path") if e else None,
                       ranks=(int(e.group("src")),) if e else (), peer=int(e.group("dst")) if e else None,
                       reference_rank=None, nranks=None)
    s = P2P_SETUP_RE.match(rest)
    if s is not None:
        return replace(base, problem=DiagProblem.FAILED, ranks=(int(s.group("rank")),), value=s.group("code"))
    if rest.startswith("active check returned"):
        return replace(base, problem=DiagProblem.FAILED, value=rest.rsplit(" ", 1)[-1])
    return replace(base, problem=DiagProblem.NONE if base.level is DiagLevel.OK else DiagProblem.NOTICE)


def _source(which: str) -> DiagSource:
    return DiagSource.RAS if which == "RAS" else DiagSource.ACTIVE


def _comm(rest: str) -> str | None:
    m = COMM_RE.search(rest)
    return m.group("comm").lower() if m else None


def _nranks(rest: str) -> int | None:
    m = ACROSS_RE.search(rest)
    return int(m.group("n")) if m else None


def _rank_set(rest: str) -> tuple[tuple[int, ...], int | None]:
    """The ranks of ``rank(s) {0,1,2}`` (and the group's size when NCCL cut the list: ``{0,...,7,...} (N=12)``)."""
    m = RANK_SET_RE.search(rest)
    if m is None:
        return (), None
    ranks = tuple(int(x) for x in m.group("list").split(",") if x.isdigit())
    total = int(m.group("total")) if m.group("total") else None
    return ranks, total


def results_of(recs: Iterable[NcclDiag]) -> list[DiagResult]:
    """Each line's result once (a RAS answer pasted into a log may be read by both readers), in file and line order,
    with the report's source (RAS or active) given to the result lines that follow its header in that file."""
    seen: dict[tuple[str, int], DiagResult] = {}
    for r in recs:
        seen.setdefault((r.file, r.line), r.result)
    out: list[DiagResult] = []
    source: dict[str, DiagSource] = {}
    for (file, _), res in sorted(seen.items()):
        if res.check is DiagCheck.REPORT and res.problem is DiagProblem.NONE and res.nranks is None:
            source[file] = res.source  # a header
        elif res.source is DiagSource.UNKNOWN and file in source:
            res = replace(res, source=source[file])
        out.append(res)
    return out
