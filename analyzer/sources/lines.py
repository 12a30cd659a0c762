"""What launchers and tools put in front of a log line, and the repair of damaged lines.

One grammar, used by the NCCL and the PyTorch parsers alike:

- ``NCCL_PREFIX_RE``: NCCL's own ``[TS]host:pid:tid [dev] [src:line] NCCL LEVEL`` head, searched (not
  anchored) so that any wrapper or glued text in front of it is passed over.
- ``TOOL_PREFIX_RE``: one prefix a launcher or log collector adds at the start of a line: torchrun's
  ``[rank3]:`` / ``[default3]:``, OpenMPI's ``[1,6]<stdout>:``, ``srun --label``'s ``6: ``, Ray's and
  vLLM's ``(RayWorkerWrapper pid=41, ip=10.0.0.2)`` / ``(VllmWorker rank=3 pid=41)``, TorchX-style
  ``trainer.node1 [stderr] ``, pdsh's ``gpu003: ``, RFC3339 / CI timestamps (GitHub Actions
  ``2026-09-17T13:40:02.1234567Z ``, Kubernetes' CRI ``... stdout F ``), a plain
  ``2026-09-17 13:40:02 ``, line numbers or pids ``[1784] ``, a user's ``Rank 3: `` print.
  ``strip_tool_prefixes`` peels them off, innermost rank last, and returns the rank one of them gave.
- Repair: ``lone_cr_to_lf`` (CR-only line ends, tqdm redraws, in place and length-preserving, so byte
  offsets hold), ``rejoin_wrapped`` (a line hard-wrapped by a terminal at 80-200 columns, split
  anywhere, joined back when the join is a line a parser knows), ``unglue_host`` (another process's
  output glued in front of an NCCL host name: ``...loss 0.00009vm:1218:1223`` is host ``vm``).

Every pattern is compiled once; callers prefilter with substring tests before any regex.
"""
from __future__ import annotations

import re
import zlib
from collections.abc import Callable, Iterable, Iterator

import numpy as np

NCCL_PREFIX_RE = re.compile(
    r"(?:\[(?P<ts>\d{4}-\d\d-\d\d[ T_]\d\d:\d\d:\d\d(?:\.\d+)?)\] ?)?"
    # the host starts where a host cannot continue: without this, a long word is retried at every offset
    r"(?<![^\s:\[\]<>(),=])(?P<host>[^\s:\[\]<>(),=]{1,255}):(?P<pid>\d{1,10}):(?P<tid>\d{1,10}) "
    r"(?:\[(?P<dev>\d{1,4})\] )?"
    r"(?:(?P<ms>\d+\.\d+) )?"
    r"(?:(?P<src>[\w./-]{1,200}:\d{1,6})(?: \((?P<func>[^()\s]{1,200})\))? )?"
    r"NCCL (?P<level>INFO|WARN|CALL|TRACE|ABORT)\b ?"
)

def _worker_tag(rank_group: str | None = None) -> str:
    """A worker process's prefix up to and with its pid: Ray's ``(ActorWorker pid=52310)``, vLLM's ``(VllmWorker
    rank=1 pid=41)`` and, with its parallel rank, ``(VllmWorker TP0 pid=2230)``, SkyPilot's ``(head, rank=0,
    pid=40211)``; ``rank_group`` names the group the ``rank=`` number is captured in (none: not captured), never
    SkyPilot's (the node's rank)."""
    rank = f"(?P<{rank_group}>\\d{{1,7}})" if rank_group else r"\d{1,7}"
    # SkyPilot's name ends in a comma and its rank= is the node's (SKYPILOT_NODE_RANK), never a process's rank
    return (r"\((?:[A-Za-z_][\w.:-]{0,100}(?: [A-Z]{1,4}\d{1,5})?, (?:rank=\d{1,7}, )?|(?:[A-Za-z_][\w.:-]{0,100}(?: [A-Z]{1,4}\d{1,5})? )?"
            r"(?:rank=" + rank + r",? )?)pid=\d{1,10}")


WORKER_IP = r"(?:, ?ip=[\w.:-]{1,64})?\)"  # the tag's optional node address, and its end

_RANKED = (
    r"\[(?:rank|default)(?P<r1>\d{1,7})\]:\s?"  # torchrun --tee / --local-ranks-filter, Lightning's [default3]
    r"|\[(?:\d{1,10},)?(?P<r2>\d{1,7})\]<(?:stdout|stderr)>:?\s?"  # mpirun --tag-output: [jobid,rank]<stdout>:,
    # horovodrun's [rank]<stdout>: (some releases print no colon: "[1]<stdout>[1] NCCL INFO ...")
    "|" + _worker_tag("r3") + WORKER_IP + r"\s?"  # Ray, vLLM, SkyPilot (``_worker_tag``)
    r"|\s{0,6}(?P<r4>\d{1,7}): "  # srun --label: the task number, padded
    r"|\[[A-Za-z_][\w.-]{0,100}/(?P<r11>\d{1,7})\] "  # a task array's gathered logs: "[<job>/086] " (task 86)
    r"|Rank (?P<r5>\d{1,7}): "  # print(f"Rank {rank}: {e}")
    r"|\[rank: (?P<r6>\d{1,7})\] "  # Lightning's rank_prefixed_message
    r"|\[RANK (?P<r8>\d{1,7})\] "  # an app's own logger: "[RANK 3] 2026-09-17 13:40:02,791 [ERROR] ..."
    r"|\[rank(?P<r9>\d{1,7})\] "  # a program's own print: "[rank0] step 5000 | loss 0.41"
    r"|\[r(?P<r10>\d{1,7})\] "  # ... or its shortest form: "[r3] step1 done"
    r"|#\s{1,4}Rank\s{1,4}(?P<r7>\d{1,7}) (?=(?:Group\s+\d+ )?Pid )"  # nccl-tests' "#  Rank  3 Group  0 Pid 4121 on ..."
)
_PLAIN = (
    r"|(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d \d\d:\d\d:\d\d \d{4}"
    r"(?=\[(?:\d{1,10},)?\d{1,7}\]<(?:stdout|stderr)>)"  # mpirun --timestamp-output's stamp before its rank tag
    r"|\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?: ?(?:Z|[+-]\d\d:?\d\d))? (?:(?:stdout|stderr) [FP] |\| )?"  # CI,
    # Kubernetes, log collectors ("2026-11-02 21:14:08.551 +08:00 ")
    r"|\[[\w.-]{1,255}:\d{1,7}\]:"  # SkyPilot's "[node:0]:"
    # torchrun's --log-line-prefix-template / TorchX roles: "[trainer3]:", "[trainer0|3]:" (role and ranks as the
    # template puts them: no rank taken from it)
    r"|\[[A-Za-z_][\w.-]{0,100}(?:\|\d{1,7}){0,2}\]:\s?"
    r"|[A-Za-z_][\w.-]{0,100}/\d{1,7} (?=\[)"  # NeMo-Run's "<job>/<replica> " before torchrun's "[default1]:[rank1]:"
    r"|[\u2502\u2503|] "  # a terminal viewer's box bar (k9s, lazydocker): "\u2502 "
    r"|\s{0,8}\| (?=\d{4}-)"  # a log viewer's table: "  | 2026-08-23T22:22:51.874Z | "
    r"|[\w-]{1,100}(?:\.[\w-]{1,100}){1,4} \[(?:stdout|stderr)\]:? "  # <name>.<node> [stderr]
    r"|\[\d{1,10}\] "  # a line number or pid in brackets
    r"|[a-z0-9][a-z0-9.-]{0,100}\d[a-z0-9.-]{0,100}: "  # pdsh / DeepSpeed multi-node: "gpu003: ", "10.1.2.3: "
    r"|[a-z][a-z0-9]{0,62}(?:-[a-z0-9]{1,62}){1,6}: "  # ... a host named with no digit: "trn-a: ", "gpu-head: "
    r"|\x1b\[[0-9;]{0,20}m"  # colour codes some loggers keep
    r"|\[[0-9;]{1,12}m(?=\()"  # ... one whose ESC a paste lost, before Ray's worker tag: "[36m(WorkerDict pid=61288)"
    r"|>(?: |$)"  # a Markdown quote ("> " before each line of a log pasted into a thread)
    # loggers' heads: DeepSpeed "[2026-09-17 13:40:02,791] [INFO] [launch.py:71:main] ", vLLM
    # "ERROR 09-17 13:40:02 [worker.py:87] ", Python's basicConfig "ERROR:root:"
    r"|\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] "
    r"|\[(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\] (?:\[[\w.]{1,100}:\d{1,6}:[\w<>]{1,100}\] )?"
    r"|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[?[\w.][\w./-]{0,100}:\d{1,6}\] "  # vLLM <= 0.6:
    # "ERROR 11-25 08:17:30 engine.py:366] " (no opening bracket); 0.11 names the module's path
    # ("[v1/executor/multiproc_executor.py:597]")
    r"|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):[\w.]{0,100}:"
    # a date, the level, the pid and a bracket ending in file:line: "2025-09-11 06:57:34 ERROR 73180 [ DP10 TP10 EP10
    # scheduler.py:2655] " (a server's Python logging format of asctime, levelname, process and its own prefix)
    # (the date is another prefix's, peeled first)
    r"|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d{1,10} \[[\w .-]{0,100}?[\w.-]{1,100}\.py(?::\d{1,6})?\] "
)
TOOL_PREFIX_RE = re.compile(f"(?:{_RANKED}{_PLAIN})")

# NCCL's head with what a poster hid put in place of the host, the pid or the tid (a head is metadata; the message
# behind it is read all the same): letters or stars for the numbers ("gpu7:XXXX:YYYY [0] NCCL INFO", "h:***:*** [1]"),
# a placeholder in angle or square brackets ("<hostname>:1201:1288 [0]", "node:<pid>:<tid> [0]", "[REDACTED]:41:41
# [0]"). The [dev] and the NCCL word are required, so that no clock or application text is taken for one; a head
# whose fields are all plain is NCCL_PREFIX_RE's.
_HIDDEN = r"<[^<>\s]{1,64}>|\[[A-Za-z][\w .-]{0,30}\]|[A-Za-z*#?]{1,16}"
REDACTED_HEAD_RE = re.compile(
    r"(?:\[(?P<ts>\d{4}-\d\d-\d\d[ T_]\d\d:\d\d:\d\d(?:\.\d+)?)\] ?)?"
    r"(?<![^\s:\[\]()=])(?P<host>" + _HIDDEN + r"|[^\s:\[\]<>(),=]{1,255}|):(?P<pid>\d{1,10}|" + _HIDDEN + r"):"
    r"(?P<tid>\d{1,10}|" + _HIDDEN + r") \[(?P<dev>\d{1,4})\] (?:(?P<ms>\d+\.\d+) )?"
    r"(?:(?P<src>[\w./-]{1,200}:\d{1,6})(?: \((?P<func>[^()\s]{1,200})\))? )?NCCL (?P<level>INFO|WARN)\b ?"
)
REDACTED_PID_BASE = 2_000_000_000  # pids made for hidden ones: above any Linux pid (2^22), within 32 bits


def decode_line(raw: bytes) -> str:
    """One line's bytes as text, the one decoding offline and live reads share: invalid UTF-8 replaced, NUL
    bytes dropped (a crashed process' log often ends in a run of them, and one inside a host name would
    otherwise make a second host)."""
    return raw.decode("utf-8", "replace").replace("\x00", "")


def hidden_id(token: str, dev: int) -> int:
    """A stable stand-in for a pid (or tid) a poster hid: the same token on the same device is one process. One token
    for every process ("XXXX" on each line) leaves the device to tell them apart; a number that was kept is itself."""
    if token.isdigit():
        return int(token)
    return REDACTED_PID_BASE + (zlib.crc32(token.encode()) % 100_000) * 1000 + dev % 1000
# mpirun --tag-output's and horovodrun's rank tag at a line's start: "[1,3]<stdout>:", "[3]<stdout>" (no colon)
MPI_TAG_RE = re.compile(r"^\[(?:\d{1,10},)?\d{1,7}\]<(?:stdout|stderr)>:?")
# mpirun --timestamp-output's stamp (ctime's form) glued in front of its rank tag: "Tue May 14 09:41:07 2024[1,0]<stdout>:"
MPI_STAMP_RE = re.compile(r"^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) "
                          r"[ \d]\d \d\d:\d\d:\d\d \d{4}(?=\[(?:\d{1,10},)?\d{1,7}\]<(?:stdout|stderr)>)")
MAX_PREFIXES = 6  # prefixes peeled off one line at most: tools nest (srun > torchrun > Ray), never deeper

_PREFIX_START = frozenset("#[(0123456789 |RDIWECMTFS>" "abcdefghijklmnopqrstuvwxyz\x1b\u2502\u2503")  # first characters a prefix can have


def strip_tool_prefixes(text: str) -> tuple[int | None, str]:
    """(rank given by a prefix or None, the line without its tool prefixes). A launcher's own rank tag
    (torchrun's ``[rank5]:``, mpirun's ``[1,5]<stdout>:``, ``rank=5`` of Ray / vLLM / SkyPilot, a
    ``Rank 5:`` print) beats ``srun --label``'s task number, whatever the nesting: ``0: [rank5]:`` is
    rank 5 (srun's task 0 is the node's launcher); between tags of one kind the innermost wins."""
    rank, _, body = split_tool_prefixes(text)
    return rank, body


def split_tool_prefixes(text: str) -> tuple[int | None, bool, str]:
    """``strip_tool_prefixes`` and whether its rank is only ``srun --label``'s task number (which a rank
    the line itself names should beat)."""
    tagged: int | None = None
    task: int | None = None
    pos = 0
    for _ in range(MAX_PREFIXES):
        if pos >= len(text) or text[pos] not in _PREFIX_START:
            break
        m = TOOL_PREFIX_RE.match(text, pos)
        if m is None or m.end() == pos:
            break
        r = (m.group("r1") or m.group("r2") or m.group("r3") or m.group("r5") or m.group("r6") or m.group("r7")
             or m.group("r8") or m.group("r9") or m.group("r10"))
        if r is not None:
            tagged = int(r)
        elif (t := m.group("r4") or m.group("r11")) is not None:
            task = int(t)
        pos = m.end()
    body = text[pos:] if pos else text
    return (tagged, False, body) if tagged is not None else (task, task is not None, body)


def maybe_nccl(text: str) -> bool:
    """Whether the NCCL parser is tried on the line (a substring test, before any regex): ``NCCL `` or,
    for 2.1/2.2's heads without the word (``host:pid:tid [0] INFO ...``), ``] INFO `` / `` WARN ``, or 2.0's
    lines that start with the level (``INFO Using internal Network Socket``, ``WARN include/socket.h:185 ...``)."""
    return ("NCCL " in text or "] INFO " in text or " WARN " in text
            or (text[:1] in "IW " and text.lstrip(" ").startswith(("INFO ", "WARN "))))


def nccl_only(text: str) -> bool:
    """An NCCL INFO / WARN line no NCCL parser took is NCCL's, never passed on to the PyTorch parser; so are
    NCCL_DEBUG=TRACE's ``NCCL CALL ncclAllReduce(...)`` / ``NCCL TRACE`` lines (not the application's output)."""
    return "NCCL INFO" in text or "NCCL WARN" in text or "NCCL CALL " in text or "NCCL TRACE " in text


def prefix_rank(text: str) -> int | None:
    """The rank a tool prefix of ``text`` gives, if any."""
    return strip_tool_prefixes(text)[0]


# --- CR-only line ends -------------------------------------------------------------------------------

def lone_cr_to_lf(buf: bytearray | memoryview, lo: int = 0, hi: int | None = None) -> int:
    """Turn every CR of ``buf[lo:hi]`` that no LF follows into an LF, in place; returns how many.
    Length-preserving, so the offsets callers hold stay right; CRLF is left alone (the parsers strip
    it). A CR at ``hi - 1`` is lone: the byte after the range is not looked at."""
    end = len(buf) if hi is None else hi
    if end <= lo:
        return 0
    arr = np.frombuffer(buf, dtype=np.uint8)[lo:end]
    cr = np.flatnonzero(arr == 13)
    if not len(cr):
        return 0
    nxt = cr + 1
    lone = cr[(nxt >= len(arr)) | (arr[np.minimum(nxt, len(arr) - 1)] != 10)]
    arr[lone] = 10
    return len(lone)


# --- glued text in front of an NCCL host -------------------------------------------------------------

def unglue_host(host: str, known: Iterable[str]) -> str:
    """``host`` with glued text cut off when it ends with a known host of the same process:
    ``0.00009vm`` -> ``vm`` when ``vm`` printed other lines with the same pid. Longest known wins."""
    best = host
    for h in known:
        if h != host and len(h) < len(host) and host.endswith(h) and (len(best) == len(host) or len(h) > len(best)):
            best = h
    return best


# --- records of two processes glued on one line ----------------------------------------------------

_PY_HEAD = r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{1,9})? \[?[\w.][\w./-]{0,100}:\d{1,6}\]"
# where a second record starts inside a line: vLLM's logger head ("INFO 11-25 08:17:28 [selector.py:135]", or 0.6's
# "INFO 11-25 08:17:28 selector.py:135]"), alone or behind its worker's "(VllmWorkerProcess pid=52311) " /
# "(VllmWorker rank=1 pid=41) ", right after text that no space or tag ends ("... backend.(VllmWorkerProcess",
# "... details)INFO 11-25"), so that a head behind a launcher's "[rank1]:" or a worker prefix is no glue point
GLUE_RE = re.compile(
    r"(?<=[^\s:\]>])(?=" + _worker_tag() + WORKER_IP + " " + _PY_HEAD + r"|" + _PY_HEAD + r")"
)
PY_HEAD_RE = re.compile("(?:" + _worker_tag() + r"[^)]{0,80}\) )?" + _PY_HEAD)
# a run-on paste: records joined by a space where the line breaks were (a browser's copy of a log viewer), each
# starting with vLLM's full head, its bracket included; cut only in a line that itself starts with a Python head
SPACED_GLUE_RE = re.compile(r"(?<= )(?=(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{1,9})? "
                            r"\[[\w.][\w./-]{0,100}:\d{1,6}\] )")
MAX_GLUED = 8  # records split out of one line at most
# the scan that finds lines worth a look: the " MM-DD HH:" of a logger head after the line's start (0.2 us a line,
# a third of five str.find calls in Python)
GLUE_HINT_RE = re.compile(r" \d\d-\d\d \d\d:")


def split_glued(text: str) -> list[str]:
    """``text`` cut where another record starts inside it: two Python / vLLM logging records run together (two
    processes writing one terminal, a worker's line glued to the engine's, a run-on paste whose line breaks became
    spaces), an NCCL line glued after a Python record or after another NCCL line of the same host. Each piece but the last gets a newline. A line without a logger head's date after its start
    (``GLUE_HINT_RE``), or without ``NCCL `` behind a Python head, is returned whole after that one scan."""
    cuts: list[int] = []
    if GLUE_HINT_RE.search(text, 1) is not None:
        cuts = [m.start() for m in GLUE_RE.finditer(text, 1)][:MAX_GLUED]
        if PY_HEAD_RE.match(text.lstrip(" ")) is not None:
            cuts += [m.start() for m in SPACED_GLUE_RE.finditer(text, 1)][:MAX_GLUED]
    if _behind_python(text):
        cuts += _nccl_after_python(text, cuts)
    elif _nccl_glue_hint(text):
        cuts += _nccl_after_nccl(text)
    if not cuts:
        return [text]
    cuts = sorted(set(cuts))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]
    return [p if p.endswith("\n") else p + "\n" for p in pieces[:-1]] + [pieces[-1]]


def _nccl_after_nccl(text: str) -> list[int]:
    """Where another NCCL line starts inside an NCCL line (processes of one host writing one terminal at once, a line
    cut mid-word: ``... threadThresholds 8h07n3:402211:405883 [1] NCCL INFO ...``): each later ``host:pid:tid`` of
    the line's own host, its pid and tid numbers and a space after it."""
    m = NCCL_PREFIX_RE.search(text)
    if m is None:
        return []
    key = m.group("host") + ":"
    head = re.compile(re.escape(key) + r"\d{1,10}:\d{1,10} ")
    cuts: list[int] = []
    at = text.find(key, m.end())
    while at > 0 and len(cuts) < MAX_GLUED:
        if head.match(text, at):
            cuts.append(at)
        at = text.find(key, at + 1)
    return cuts


def _nccl_after_python(text: str, cuts: list[int]) -> list[int]:
    """Where an NCCL line starts behind a Python record (``ERROR 11-25 ... failedgpu1:41:41 [0] NCCL WARN ...``):
    the NCCL head's start, when the text before it (from the last cut) begins with a Python head."""
    m = NCCL_PREFIX_RE.search(text)
    if m is None or m.start() == 0:
        return []
    start = max((c for c in cuts if c < m.start()), default=len(text) - len(text.lstrip(" ")))
    return [m.start()] if PY_HEAD_RE.match(text, start) is not None else []


# --- hard-wrapped lines ------------------------------------------------------------------------------

WRAP_MIN, WRAP_MAX = 80, 200  # widths terminals and paste boxes wrap at
MAX_WRAP_PIECES = 12  # a wrapped line is joined from this many pieces at most (2,400 characters)
# starts of lines that are never the tail of a wrapped line: an NCCL head, a glog head, a wrapper prefix,
# a traceback's frame
LINE_START_RE = re.compile(
    r"\[?\d{4}-\d\d-\d\d[ T]|[^\s:\[\]<>(),=]{0,255}:\d{1,10}:\d{1,10} |\[(?:rank|default)\d+\]:|\[\d+,\d+\]<"
    r"|\[?[EWIF]\d{4} |\[[EWIF] [\w./-]+:\d+\]|Traceback \(|\s{1,40}File \"|\(\w[\w.:-]* (?:rank=\d+ )?pid=|frame #\d"
    r"|terminate called after throwing |\s{0,4}what\(\): |Exception raised from "  # the C++ runtime's abort
    # glibc's heap check before its abort (sources.torch_log.HEAP_ABORT_RE)
    r"|(?:free|malloc|realloc|munmap_chunk|malloc_consolidate|_int_free|_int_malloc)\(\): "
    r"|double free or corruption|corrupted size vs\. prev_size|corrupted double-linked list"
    r"|(?:\[[\d,]{1,24}\](?:<std(?:out|err)>)?:? ?)?NCCL version \d"  # NCCL <= 2.21's bare version line, often
    # right after an 80-200 column NET line, alone or behind "[3] " / "[1,0]<stdout>:"
    r"|(?:[^\s:\[\]<>(),=]{1,255}:\d{1,10} )?NCCL DIAG "  # 2.31+'s diagnostics lines (DIAG_HEAD_RE)
)
# NCCL 2.31+'s diagnostics head, "node042:12345 NCCL DIAG " (the printing process's host and pid; no tid, no [dev]),
# at a line's start once tool prefixes are stripped; a pasted report may lose the host:pid
DIAG_HEAD_RE = re.compile(r"(?:(?P<host>[^\s:\[\]<>(),=]{1,255}):(?P<pid>\d{1,10}) )?NCCL DIAG ")


def starts_a_line(text: str) -> bool:
    """Whether ``text`` begins like a line of its own (an NCCL or glog head, a tool prefix, a traceback
    frame), so that it is never taken for the tail of a wrapped line."""
    if LINE_START_RE.match(text) is not None:
        return True
    if "NCCL " in text and (NCCL_PREFIX_RE.search(text) is not None or REDACTED_HEAD_RE.match(text) is not None):
        return True
    return text[:1] in _PREFIX_START and TOOL_PREFIX_RE.match(text) is not None


def _width(text: str) -> int:
    return len(text.rstrip("\r\n"))


def rejoin_wrapped(lines: Iterable[tuple[int, str]],
                   accept: Callable[[str, str], bool]) -> Iterator[tuple[int, str]]:
    """(line number, text) with hard-wrapped lines joined back. A wrapped line is a run of consecutive
    lines of one width W (80 to 200 columns) ending with one of at most W, none after the first starting
    like a line of its own; the run is joined (keeping the first line's number) when ``accept(first line,
    joined text)`` says the join is a line a parser knows. Anything else passes through unchanged, and
    a line is only looked at again when a line that could continue it follows. Records glued on one line are
    then split (``split_glued``), each piece keeping the line's number; the common line costs one scan
    (``_whole``), no call."""
    held: list[tuple[int, str]] = []

    def flush() -> Iterator[tuple[int, str]]:
        if len(held) > 1:
            joined = "".join(t.rstrip("\r\n") for _, t in held) + "\n"
            if accept(held[0][1], joined):
                yield from _pieces(held[0][0], joined)
                held.clear()
                return
        for n, t in held:
            yield from _pieces(n, t)
        held.clear()

    hint = GLUE_HINT_RE.search
    first_w = last_w = 0  # widths of the first and the last held line, kept as they are held
    for lineno, text in lines:
        w = len(text) - (text.endswith("\n") + text.endswith("\r\n"))
        if held:
            if (lineno == held[-1][0] + 1 and 0 < w <= first_w and last_w == first_w
                    and len(held) < MAX_WRAP_PIECES and not starts_a_line(text)):
                held.append((lineno, text))
                last_w = _width(text)
                if w < first_w:
                    yield from flush()
                continue
            if len(held) == 1:  # a line alone passes through (flush's own first case)
                one = held[0]
                held.clear()
                if hint(one[1], 1) is None and not _nccl_glue_hint(one[1]):
                    yield one
                else:
                    yield from _pieces(*one)
            else:
                yield from flush()
        if WRAP_MIN <= w <= WRAP_MAX:
            held.append((lineno, text))
            first_w = last_w = _width(text)
        elif hint(text, 1) is None and not _nccl_glue_hint(text):
            yield lineno, text
        else:
            yield from _pieces(lineno, text)
    yield from flush()


def _nccl_glue_hint(text: str) -> bool:
    """A line that may hold an NCCL line glued behind another record: behind a Python head (``_behind_python``), or
    behind another NCCL line (two heads' ``NCCL `` words in one line)."""
    return "NCCL " in text and (text.lstrip(" ")[:1] in "DIWEC(" or text.count(" NCCL ") > 1)


def _behind_python(text: str) -> bool:
    """A line with ``NCCL `` in it that starts like a Python logging record (its level, or a worker's tag)."""
    return "NCCL " in text and text.lstrip(" ")[:1] in "DIWEC("


def _pieces(lineno: int, text: str) -> Iterator[tuple[int, str]]:
    """A line's glued records (``split_glued``), each with the line's number."""
    for piece in split_glued(text):
        yield lineno, piece


def nccl_head(line: str) -> tuple[str, int, int | None, int] | None:
    """(host, pid, device or None, where the head starts) of an NCCL line's ``host:pid:tid [dev]`` head, wherever
    a launcher's prefix put it in the first 400 characters; a head whose fields a poster hid is read too (its pid a
    stable stand-in, ``hidden_id``). The one reading of the head for code outside the parsers (the rules)."""
    text = line[:400]
    m = NCCL_PREFIX_RE.search(text)
    if m is not None:
        dev = m.group("dev")
        return m.group("host"), int(m.group("pid")), int(dev) if dev is not None else None, m.start()
    m = REDACTED_HEAD_RE.search(text)
    if m is None:
        return None
    dev_ = int(m.group("dev"))
    return m.group("host"), hidden_id(m.group("pid"), dev_), dev_, m.start()

