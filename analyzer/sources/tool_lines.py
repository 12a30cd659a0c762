"""Other tools' lines in a job's console, read beside PyTorch's (``torch_log`` asks ``ToolLines.read`` first):

- the MPI runtime, ssh under it, UCX and UCC; DeepSpeed's report of a process killed by a signal and pdsh's
  word of the user's interrupt (``launcher_log``);
- the NVIDIA driver's kernel lines about a GPU (``kernel_log``);
- py-spy and faulthandler stack dumps (``stack_dump``); gdb's, lldb's and py-spy's native frames of a thread parked
  inside NCCL (``native_stack``);
- serving and JAX frameworks' own words: their stall reports, a rank's batch at a timeout, the world a serving command
  states, XLA's NCCL failures (``framework_lines``);
- DeepSpeed's comms-logger summary table, a row each (``ds_comms``);
- Horovod's trace lines, each rank's operation still open at the file's end as its wait (``horovod_trace``);
- the program's own prints that a rank waits (``ProgressWait``): ``rank 2 waiting for barrier``, ``[rank1] waiting on
  rank 3``, ``tearing down process groups``, ``sending to stage 1``, a launcher's rank tag or the line's own ``rank N``
  naming the waiting rank. Library lines (a glog or logging head, c10d's, NCCL's) are not the program's, except the
  pipelining stage's own shape-inference send and receive.
"""
from __future__ import annotations

import re
from collections.abc import Generator, Iterator

from .ds_comms import CommSummaryReader
from .framework_lines import framework_line
from .horovod_trace import HorovodTraceReader
from .kernel_log import gpu_fault, named_gpu
from .launcher_log import launch_failure, launcher_end
from .native_stack import NativeStackReader
from .rank_prints import RankPrintReader
from .records import BarrierEntered, NodeCount, ProgressWait, Rec, StallNoted, WorldSize
from .stack_dump import StackReader

WAIT_RE = re.compile(r"(?i)\bwaiting (?:for|on|at)\b")
# a print that the rank goes into a collective ("starting alltoall warm-up", "launching ncclAllGather"): its last print,
# nothing after it, says it is inside that collective as a wait does
INTO_RE = re.compile(r"(?i)\b(?:starting|launching|calling|entering|issuing) (?:the |an? |first )?(?:nccl[A-Z]\w{2,30}"
                     r"|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|broadcast|barrier|collective)")
# a print that the rank goes into a blocking call of another kind: tearing its process groups down (a collective of
# every member), a point-to-point send or receive to or from a named peer or pipeline stage
INTO_OTHER_RE = re.compile(r"(?i)\btearing down (?:the |all )?process groups?\b|\bdestroy(?:ing)?[ _]process[ _]groups?\b"
                           r"|\b(?:sending|receiving) (?:to|from) (?:stage|rank|peer) ?\d{1,7}\b")
# torch.distributed.pipelining's own (verbose) lines of a stage's shape inference exchange: a library's line, read as
# the stage's wait all the same
PIPELINE_P2P_RE = re.compile(r"Shape inference: stage \d{1,5} (?:receiving from|sending to) stage \d{1,5}")
# a poster's note, set apart in brackets, a comment or an ellipsis, that the output stopped there: "(no further output
# for 40+ minutes)", "<hangs here>", "# stuck here forever", "... nothing more is printed"
NOTE_OPENERS = frozenset("(<[#.-*")
STALL_NOTE_RE = re.compile(r"(?i)^[(<\[#.\-*\s]{1,6}(?:[\w ,;:]{0,40}\b)?(?:no (?:further|more) output|nothing (?:more|else|further) "
                           r"(?:is |was |gets )?printed|(?:it )?(?:hangs|hung|stuck|freezes|frozen|stalls) (?:here|forever|"
                           r"indefinitely|at this point)|the (?:run|job|process) (?:stays|sits|hangs) (?:here|there))")
# a print that the call it names is over: "destroy_process_group done", "barrier returned", "all_reduce finished"
CAME_OUT_RE = re.compile(r"(?i)\W{0,5}(?:\w{1,30}\W{1,3}){0,2}(?:done|finished|completed?|returned|passed|succeeded|ok)\b")
PRINT_VERBS = ("aiting ", "tarting ", "aunching ", "alling ", "ntering ", "ssuing ", "earing down", "estroy",
               "ending to", "eceiving from")  # substrings before the regexes
WAIT_RANK_RE = re.compile(r"(?i)\b(?:rank|process|worker|gpu)[ =:#]?\s?(?P<rank>\d{1,7})\b")
WAIT_ON_RE = re.compile(r"(?i)\bwaiting (?:for|on) (?:rank|process|worker) ?(?P<on>\d{1,7})\b")
LIBRARY_RE = re.compile(r"\[[EWIF]\d{4}|\[[EWIF] |c10d|ProcessGroup|TCPStore|torch\.|torch/|NCCL|gloo|store based barrier")


class ToolLines:
    """What the torch parser hands every line to first; its state is the open stack dumps."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.stacks = StackReader(file)
        self.native = NativeStackReader(file)
        self.named_gpu: str | None = None  # the GPU a driver's "NVRM: The NVIDIA GPU <pci>" line named
        self.prints = RankPrintReader(file)  # the program's prints stating their rank (read, never taken)
        self.comms = CommSummaryReader(file)  # DeepSpeed's comms-logger summary table
        self.horovod = HorovodTraceReader(file)  # Horovod's trace of each rank's operations

    def read(self, lineno: int, text: str, body: str, rank: int | None) -> Generator[Rec, None, bool]:
        """The records of one line of another tool; True when the line was that tool's (nothing else reads it)."""
        if body[:1] in NOTE_OPENERS and STALL_NOTE_RE.search(body):
            yield StallNoted(self.file, lineno, text, rank, None, None, None)
            return True
        parked = self.native.read(lineno, text, body, rank)  # a native frame inside NCCL: the line is read on too
        if parked is not None:
            yield parked
        taken, closed = self.stacks.read(lineno, text, body, rank)
        yield from closed
        if taken:
            return True
        if self.horovod.read(lineno, text, body):
            return True
        taken, row = self.comms.read(lineno, text, body, rank)
        if taken:
            if row is not None:
                yield row
            return True
        self.prints.read(lineno, text, body)
        if "NVRM:" in body:
            g = gpu_fault(body, self.file, lineno, text, rank, self.named_gpu)
            self.named_gpu = named_gpu(body) or (self.named_gpu if g is None else None)
            if g is not None:
                yield g
                return True
        f = launch_failure(body, self.file, lineno, text, rank)
        if f is not None:
            yield f
            return True
        end = launcher_end(body, self.file, lineno, text)
        if end is not None:
            yield end
            return True
        told = list(framework_line(self.file, lineno, text, body, rank))
        yield from told
        if any(not isinstance(r, (WorldSize, NodeCount, BarrierEntered)) for r in told):
            return True  # a stated world and c10d's barrier warning are read on by the PyTorch parser too
        if any(v in body for v in PRINT_VERBS) and (w := progress_wait(body, self.file, lineno, text, rank)) is not None:
            yield w
            return True
        return False

    def flush(self) -> Iterator[Rec]:
        yield from self.stacks.flush()
        yield from self.prints.flush()
        yield from self.horovod.flush()


def progress_wait(body: str, file: str, lineno: int, text: str, rank: int | None) -> ProgressWait | None:
    """The program's print that a rank waits, or None (a library's line, no rank known)."""
    other = None
    w = WAIT_RE.search(body) or INTO_RE.search(body) or (other := INTO_OTHER_RE.search(body))
    if w is None or (LIBRARY_RE.search(body) and not PIPELINE_P2P_RE.search(body)):
        return None
    if CAME_OUT_RE.match(body, w.end()):  # "destroy_process_group done": the print of its end, not of a wait
        return None
    m = WAIT_RANK_RE.search(body[:w.start()]) if rank is None else None  # the rank named before the wait
    who = rank if rank is not None else (int(m.group("rank")) if m else None)
    if who is None:
        return None
    on = WAIT_ON_RE.search(body)
    return ProgressWait(file, lineno, text, who, None, None, None, int(on.group("on")) if on else None, other is not None)
