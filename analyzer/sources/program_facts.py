"""What a training program's own start-up prints say of the job, beside what torch and the launchers print.

- The torch version a program prints of itself as ``name: value`` or ``name=value`` (RETURNN's ``PyTorch: 2.1.0+cu121``,
  a script's ``torch=2.13.0+cu130``): the release torch reports (``torch.__version__``), its local build suffix kept.
- A collective's measured time as the program prints it (``[bench] dp_group 2 ranks [2, 10, 18, 26] allreduce avg
  11.06 ms``, ``all_reduce took 3.2 ms``, or its rate: ``all_gather busbw 11.7 GB/s``): a ``ProgramTiming`` of the
  operation, its milliseconds (for a rate, those of one GB) and the line's shape
  (small numbers such as group ids and ranks masked; sizes, counts and numbers with a size unit kept).
- Accelerate's print of its state (``Distributed environment: MULTI_GPU  Backend: nccl`` / ``Num processes: 4`` /
  ``Process index: 0``): the world's size, from its bare ``Num processes:`` line.
- A script's own summary of its job in one line (``[bench] world=32 nodes=4 dp_groups=4``, or in the environment's
  names: ``NNODES=4 GPUS_PER_NODE=4 WORLD_SIZE=16``): world size and nodes.
- fairseq's and metaseq's count of the devices it trains on (``training on 8 devices (GPUs/TPUs)``, ``| training on
  4 GPUs``): the world's size.
- fairseq's and metaseq's line as each rank joins (``initialized host lm-node-07 as rank 3``, ``LayoutLines``): when
  the lines of one file name ranks 0 to N-1, every one of N processes joined the group, on as many nodes as hosts named.
- Composer's config block (``num_gpus_per_node: 4`` then ``num_nodes: 2``, ``LayoutLines``): the world's size and nodes.
- RETURNN's line as each process joins the group (``Torch distributed initialized. Hostname cn-31, pid 71203, rank 0,
  local_rank 0, local_size 4, size 4``): the world's size, and one node where the processes of the printing node are
  the whole world (``local_size`` equal to ``size``); its other print of the same (``Torch: Distributed: rank 1, size 4,
  local rank 1, local size 4``) alike.
"""
from __future__ import annotations

import re
from collections.abc import Iterator

from .records import GroupFormed, NodeCount, ProgramTiming, Rec, TorchVersionLine, WorldSize

# "PyTorch: 2.1.0+cu121", "torch=2.13.0+cu130", "torch: 2.4.1" (not "torch.distributed: ..." nor a path)
TORCH_PRINT_RE = re.compile(r"(?<![\w./-])(?:PyTorch|torch)\s?[:=]\s?v?(?P<v>\d{1,2}\.\d{1,3}\.\d{1,3}(?:[a-z]\w{0,10})?"
                            r"(?:\+[\w.]{1,40})?)(?![\w.])")
RETURNN_DIST_RE = re.compile(r"Torch distributed initialized\. Hostname \S{1,255}, pid \d{1,10}, rank (?P<r>\d{1,7}), "
                             r"local_rank \d{1,7}, local_size (?P<ls>\d{1,7}), size (?P<s>\d{1,7})\b")
# RETURNN's other print of the same: "Torch: Distributed: rank 1, size 4, local rank 1, local size 4"
RETURNN_DIST2_RE = re.compile(r"Distributed: rank (?P<r>\d{1,7}), size (?P<s>\d{1,7}), local[ _]rank \d{1,7}, "
                              r"local[ _]size (?P<ls>\d{1,7})\b")
# Accelerate's print of its state (``print(accelerator.state)``, ``logger.info(accelerator.state)``): a line
# "Distributed environment: MULTI_GPU  Backend: nccl" then the bare line "Num processes: 4" (the world's size)
ACCEL_PROCS_RE = re.compile(r"\s{0,8}Num processes: (?P<n>\d{1,7})\s{0,4}")
WORDS = ("orch:", "orch=", "orch: ", "orch =", "Torch distributed initialized", "nodes=", "ank", "ANK",
         "Distributed: rank", "Num processes: ", "NODES=", "training on ")
# fairseq / metaseq: "training on 8 devices (GPUs/TPUs)", fairseq 0.6's "| training on 4 GPUs"
TRAINING_ON_RE = re.compile(r"(?<![\w.])training on (?P<n>\d{1,7}) (?:devices \(GPUs/TPUs\)|GPUs)(?![\w(])")
# a script's own print of its rank and the world's size: "Rank 2 of 4.", "hello from rank 3/8", "rank: 1, world_size: 4",
# "RANK=0 WORLD_SIZE=8" (the rank below the size; a step counter "rank 0 step 3/10" has a word between)
RANK_OF_RE = re.compile(r"(?i)(?<![\w.])rank[ :=]{0,3}(?P<r>\d{1,7})(?: of |/| out of )(?P<s>\d{1,7})\b(?!/)"
                        r"|(?<![\w.])rank[ :=]{1,3}(?P<r2>\d{1,7}),? {1,3}world[_ ]?size[ :=]{1,3}(?P<s2>\d{1,7})\b")
# a script's own summary of its job: "world=32 nodes=4", "world_size=16 nnodes=2", the environment's names
# "NNODES=4 GPUS_PER_NODE=4 WORLD_SIZE=16" (both in one line)
JOB_PRINT_RE = re.compile(r"(?i)(?<![\w.])world(?:_size)?=(?P<w>\d{1,7})\b.{0,80}?(?<![\w.])n?nodes=(?P<n>\d{1,5})\b"
                          r"|(?<![\w.])n?nodes=(?P<n2>\d{1,5})\b.{0,80}?(?<![\w.])world(?:_size)?=(?P<w2>\d{1,7})\b")
# "allreduce avg 18.42 ms", "all_reduce time: 3.1ms", "all-gather took 0.8 s": the op, a word of timing, a time
TIMING_RE = re.compile(r"(?<![\w.])(?P<op>all[_-]?reduce|all[_-]?gather|reduce[_-]?scatter|all[_-]?to[_-]?all|broadcast)"
                       r"\b[^\n]{0,80}?\b(?:avg|average|mean|time|took|latency|elapsed|duration)\b[^\d\n]{0,12}"
                       r"(?P<v>\d{1,9}(?:\.\d{1,6})?)\s?(?P<u>ms|us|s)\b")
# "all_gather busbw 11.7 GB/s", "allreduce bandwidth: 96.0 Gb/s": a collective's rate, the time of one GB from it
RATE_RE = re.compile(r"(?<![\w.])(?P<op>all[_-]?reduce|all[_-]?gather|reduce[_-]?scatter|all[_-]?to[_-]?all|broadcast)"
                     r"\b[^\n]{0,80}?\b(?:busbw|algbw|bandwidth|bw|throughput)\b[^\d\n]{0,12}"
                     r"(?P<v>\d{1,9}(?:\.\d{1,6})?)\s?(?P<u>GB/s|GiB/s|Gb/s|MB/s)")
RATE_MARK = "<rate>"  # where a rate stood in a line's shape (``timing_shape``)
UNIT_GBS = {"GB/s": 1.0, "GiB/s": 1.073741824, "Gb/s": 0.125, "MB/s": 1e-3}
TIMING_WORDS = ("reduce", "gather", "scatter", "to_all", "toall", "to-all", "broadcast")
NOT_TIMING = ("NCCL INFO", "NCCL WARN", "Timeout", "timed out", "atchdog", "OpType")
UNIT_MS = {"ms": 1.0, "us": 1e-3, "s": 1e3}
# a number the shape keeps: one with a size unit after it, or a large integer (a size or a count, not an id)
KEPT_NUMBER_RE = re.compile(r"\d+(?:\.\d+)?\s?(?:[KMGT]i?B|[KMG]\b|bytes|B\b)|\d{4,}(?![.\d])")
NUMBER_RE = re.compile(r"\d+(?:\.\d+)?")
MAX_WORLD = 1 << 20


def printed_torch(body: str) -> str | None:
    """The torch version a program's own print states, or None."""
    if not any(w in body for w in WORDS[:4]):
        return None
    m = TORCH_PRINT_RE.search(body[:2000])
    return m.group("v") if m else None


def returnn_world(body: str) -> tuple[int, int, bool] | None:
    """(rank, world size, the whole world on the printing node) of RETURNN's join line, or None."""
    if WORDS[4] in body:
        m = RETURNN_DIST_RE.search(body)
    elif WORDS[8] in body:
        m = RETURNN_DIST2_RE.search(body)
    else:
        return None
    if m is None or not 0 < int(m.group("s")) <= MAX_WORLD:
        return None
    return int(m.group("r")), int(m.group("s")), int(m.group("ls")) == int(m.group("s"))


def rank_of_world(body: str) -> tuple[int, int] | None:
    """(rank, world size) of a script's own "Rank r of N" print, or None."""
    if "ank" not in body and "ANK" not in body:
        return None
    m = RANK_OF_RE.search(body[:1000])
    if m is None:
        return None
    r, n = (int(m.group("r")), int(m.group("s"))) if m.group("r") is not None else (int(m.group("r2")), int(m.group("s2")))
    return (r, n) if 0 <= r < n <= MAX_WORLD else None


def accelerate_processes(body: str) -> int | None:
    """The world's size of Accelerate's state print (its bare ``Num processes: N`` line), or None."""
    if WORDS[9] not in body:
        return None
    m = ACCEL_PROCS_RE.fullmatch(body)
    return int(m.group("n")) if m is not None and 0 < int(m.group("n")) <= MAX_WORLD else None


def training_on(body: str) -> int | None:
    """The world's size of fairseq's ``training on N devices`` line, or None."""
    if WORDS[11] not in body:
        return None
    m = TRAINING_ON_RE.search(body[:1000])
    return int(m.group("n")) if m is not None and 0 < int(m.group("n")) <= MAX_WORLD else None


def printed_job(body: str) -> tuple[int, int] | None:
    """(world size, nodes) of a script's own print of both in one line (``world=32 nodes=4``), or None."""
    if "nodes=" not in body and "NODES=" not in body:
        return None
    m = JOB_PRINT_RE.search(body[:1000])
    if m is None:
        return None
    w, n = int(m.group("w") or m.group("w2")), int(m.group("n") or m.group("n2"))
    return (w, n) if 0 < n <= w <= MAX_WORLD else None


def facts_words(body: str) -> bool:
    """The line may hold one of these facts (a cheap gate before the regexes)."""
    return any(w in body for w in WORDS)


def timing_shape(body: str, start: int, end: int, mark: str = "<t>") -> str:
    """The line with its time or rate (``start:end``, written as ``mark``) and its small numbers masked, sizes and
    counts kept."""
    masked = body[:start] + mark + body[end:]
    out, pos = [], 0
    for m in NUMBER_RE.finditer(masked):
        kept = KEPT_NUMBER_RE.match(masked, m.start())
        out += [masked[pos:m.start()], masked[m.start():m.end()] if kept else "#"]
        pos = m.end()
    return "".join(out + [masked[pos:]]).strip()


def printed_timing(body: str) -> tuple[str, float, str] | None:
    """(operation, milliseconds, shape) of a program's print of a collective's measured time, or None; a printed rate
    (GB/s) gives the milliseconds one GB takes at it, so that the slower line is the longer one either way."""
    if not any(w in body for w in TIMING_WORDS) or any(w in body for w in NOT_TIMING):
        return None
    m = TIMING_RE.search(body[:1000])
    mark = "<t>"
    if m is not None:
        ms = float(m.group("v")) * UNIT_MS[m.group("u")]
    elif (m := RATE_RE.search(body[:1000])) is not None:
        gbs = float(m.group("v")) * UNIT_GBS[m.group("u")]
        if gbs <= 0:
            return None
        ms, mark = 1000.0 / gbs, RATE_MARK
    else:
        return None
    op = m.group("op").replace("_", "").replace("-", "")
    return op, ms, timing_shape(body[:1000], m.start("v"), m.end("u"), mark)


def program_facts(file: str, lineno: int, text: str, body: str) -> Iterator[Rec]:
    """The torch version, world size and node count the line states, a collective's time it measured (none for any
    other line)."""
    if (t := printed_timing(body)) is not None:
        yield ProgramTiming(file, lineno, text, None, None, None, None, *t)
        return
    if not facts_words(body):
        return
    v = printed_torch(body)
    if v is not None:
        yield TorchVersionLine(file, lineno, text, None, None, None, None, v, None)
    j = printed_job(body)
    if j is not None:
        yield WorldSize(file, lineno, text, None, None, None, None, j[0])
        yield NodeCount(file, lineno, text, None, None, None, None, j[1])
    ro = rank_of_world(body)
    if ro is not None:
        yield WorldSize(file, lineno, text, ro[0], None, None, None, ro[1])
    n = accelerate_processes(body)
    if n is not None:
        yield WorldSize(file, lineno, text, None, None, None, None, n)
    n = training_on(body)
    if n is not None:
        yield WorldSize(file, lineno, text, None, None, None, None, n)
    w = returnn_world(body)
    if w is not None:
        yield WorldSize(file, lineno, text, w[0], None, None, None, w[1])
        if w[2]:
            yield NodeCount(file, lineno, text, None, None, None, None, 1)


# fairseq / metaseq as each rank joins: "initialized host lm-node-07 as rank 3"
JOINED_HOST_RE = re.compile(r"\binitialized host (?P<h>[\w.-]{1,255}) as rank (?P<r>\d{1,7})\s*$")
# Composer's config block: "num_gpus_per_node: 8" then "num_nodes: 1", each a bare line
COMPOSER_GPUS_RE = re.compile(r"num_gpus_per_node: (?P<n>\d{1,7})")
COMPOSER_NODES_RE = re.compile(r"num_nodes: (?P<n>\d{1,5})")
MAX_JOINED = 1 << 16


class LayoutLines:
    """The lines of one file that state the job's layout across several lines: fairseq's ranks joining from their
    hosts (given at the end: the group formed when ranks 0 to N-1 all joined) and Composer's config block."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.joined: dict[int, str] = {}
        self.last: tuple[int, str] = (0, "")
        self.per_node: int | None = None
        self.given: set[tuple[int, int]] = set()

    def read(self, lineno: int, text: str, body: str) -> tuple[Rec, ...]:
        """The records a line gives at once (a plain call: every line of a console passes here)."""
        if "initialized host" in body and (m := JOINED_HOST_RE.search(body)) is not None:
            if len(self.joined) < MAX_JOINED:
                self.joined[int(m.group("r"))] = m.group("h")
                self.last = (lineno, text)
        elif body.startswith("num_gpus_per_node: ") and (g := COMPOSER_GPUS_RE.fullmatch(body.rstrip())) is not None:
            self.per_node = int(g.group("n"))
        elif (body.startswith("num_nodes: ") and self.per_node and (n := COMPOSER_NODES_RE.fullmatch(body.rstrip()))
              is not None and 0 < int(n.group("n")) and (self.per_node, int(n.group("n"))) not in self.given):
            nodes = int(n.group("n"))
            self.given.add((self.per_node, nodes))  # (the block is printed once per rank)
            if self.per_node * nodes <= MAX_WORLD:
                return (WorldSize(self.file, lineno, text, None, None, None, None, self.per_node * nodes),
                        NodeCount(self.file, lineno, text, None, None, None, None, nodes))
        return ()

    def flush(self) -> Iterator[Rec]:
        n = len(self.joined)
        if n >= 2 and set(self.joined) == set(range(n)):
            line, text = self.last
            yield GroupFormed(self.file, line, text, None, None, None, None, n)
            yield NodeCount(self.file, line, text, None, None, None, None, len(set(self.joined.values())))
