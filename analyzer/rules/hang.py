"""Which collective is stuck, and who never joined it, from each member's last enqueued and last
completed sequence number (Flight Recorder, watchdog lines, the hook's records or heartbeats)."""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

# a claimed world is believed while its unseen ranks are at most as many as those seen, plus this
UNSEEN_SLACK = 8
MAX_LISTED = 4096  # ranks a rule lists by walking a claimed world


@dataclass(frozen=True, slots=True)
class Stuck:
    seq: int  # the first collective not completed on every member
    never: tuple[int, ...]  # members whose last enqueued is below it
    waiting: tuple[int, ...]  # members in it, not completed


def stuck_collective(enqueued: Mapping[int, int | None], completed: Mapping[int, int | None],
                     completion_may_lag: bool = False) -> Stuck | None:
    """``enqueued`` / ``completed``: per member (every member a key of ``enqueued``; a member never
    seen has None), its last sequence number. None when everything issued completed everywhere.
    N is the first collective not completed on every member seen (the ranks seen completing it prove
    that the unseen were not in it); members never seen are the culprits only when no member seen is
    behind (what we cannot see is a suspect, not a witness against what we can), and only while they are no more
    than the members seen: one rank's log of a world of four names none of the three it cannot see.

    With ``completion_may_lag`` (gloo's Flight Recorder, whose completed count can stay behind): a
    collective every member seen joined, while some member already issued a later one, is taken as
    completed. Without a failure such a collective completes on a CPU backend; a count left behind
    would otherwise move the stuck point back to it and call everyone 'waiting in it', hiding the
    member that never joined the next one (seen on a real gloo hang: #16 'never completed' on all
    three ranks, where rank 2 never joined #17)."""
    issued = [v for v in enqueued.values() if v is not None]
    if not issued:
        return None
    done = {r: completed.get(r) or 0 for r in enqueued}
    n = min(d for r, d in done.items() if enqueued[r] is not None) + 1
    if n > max(issued):
        return None
    never = tuple(sorted(r for r, e in enqueued.items() if e is not None and e < n))
    unseen_any = any(e is None for e in enqueued.values())
    if completion_may_lag and not never and not unseen_any and n < max(issued):
        floor = min(issued)  # every member joined up to here
        done = {r: max(d, min(floor, enqueued[r] or 0)) for r, d in done.items()}
        n = min(done.values()) + 1
        if n > max(issued):
            return None
        never = tuple(sorted(r for r, e in enqueued.items() if e is not None and e < n))
    if not never:
        unseen = tuple(sorted(r for r, e in enqueued.items() if e is None))
        seen = len(enqueued) - len(unseen)
        never = unseen if len(unseen) <= seen else ()  # most of the world unseen: its few seen say nothing of whom
    waiting = tuple(sorted(r for r, e in enqueued.items() if r not in never and e is not None and done[r] < n))
    return Stuck(n, never, waiting)


def implied_world(seen: Iterable[int]) -> int | None:
    """Where no world size is stated: ranks 1 to k all seen and none of rank 0's lines imply a world of at least k + 1,
    rank 0 in it (rank 0 is a member of every world). That shape is rank 0 busy elsewhere (evaluating, saving a
    checkpoint, preparing data) while the others wait in the next collective. None otherwise."""
    s = set(seen)
    if len(s) >= 2 and 0 not in s and s == set(range(1, max(s) + 1)):
        return max(s) + 1
    return None


def bounded_world(world: int | None, seen: Iterable[int]) -> list[int]:
    """The ranks to judge: those seen, plus the ranks of a claimed ``world`` never seen when what was
    seen makes the claim plausible (at most as many unseen as seen, plus a few); a record claiming
    2^20 ranks beside 4 seen is not believed, and nothing is sized by it."""
    ranks = set(seen)
    if world and 0 < world and world - sum(1 for r in ranks if 0 <= r < world) <= len(ranks) + UNSEEN_SLACK:
        ranks.update(range(world))  # the unseen counted, not the highest rank: {0, 2^20 - 1} seen lists 2 ranks
    return sorted(ranks)


def behind_by_counts(counts: Mapping[int, int]) -> tuple[int, ...]:
    """The ranks behind a unanimous majority of last collective counts (NCCL COLL lines of one
    communicator at the end of the logs): every other rank at one same count, a few below it (at
    most one in eight, and at least three ranks in all). Scattered counts, as a healthy job stopped at a
    random moment leaves them, name nobody."""
    if len(counts) < 3:
        return ()
    top = max(counts.values())
    behind = tuple(sorted(r for r, n in counts.items() if n < top))
    if not behind or len(behind) > max(1, len(counts) // 8):
        return ()
    return behind


@dataclass(frozen=True, slots=True)
class InitStall:
    suspects: tuple[int, ...]  # communicator ranks that started init and never printed Init COMPLETE
    level: str  # "likely" when the job is known to have failed or stalled, else "possible"
    why: str


def init_stall(started: Iterable[int], complete: Iterable[int], failed: bool, exit_known: bool,
               excerpt: bool) -> InitStall | None:
    """An init that some ranks started and never completed. In a job known to have failed or stalled it is
    the hang (likely); in a pasted excerpt whose job's exit is unknown (no exit code, no exit record, no
    wrapper's records to show it still running), the log stopping inside init is a possible hang at init:
    a healthy job's log goes on past Init COMPLETE. A rank with no log at all is no suspect (unseen, not
    stuck). None when every rank that started also completed, or when nothing says the job ended."""
    stuck = tuple(sorted(set(started) - set(complete)))
    if not stuck:
        return None
    if failed:
        return InitStall(stuck, "likely", "the job failed or stalled while these ranks were still in init")
    if exit_known or not excerpt:
        return None
    return InitStall(stuck, "possible", "the log ends inside init (Init START with no Init COMPLETE) and the "
                     "job's exit is unknown: a healthy init goes on to Init COMPLETE")


# PyTorch's ProcessGroupNCCL::broadcastUniqueNCCLID: "[1] is setting up NCCL communicator and retrieving
# ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got error: ..." (1.x-2.x;
# older releases spell it "retreiving"); both ranks are ranks of the group the communicator is made for
UNIQUE_ID_WAIT_RE = re.compile(
    r"\[(?P<me>\d{1,7})\] is setting up NCCL communicator and retr(?:ei|ie)ving ncclUniqueId from "
    r"\[(?P<root>\d{1,7})\] via c10d key-value store by key '(?P<key>[^']{0,200})', but store->get\('[^']{0,200}'\) "
    r"got error:\s?(?P<error>.{0,300})")
TIMED_OUT_RE = re.compile(r"[Tt]ime ?out|timed out")


@dataclass(frozen=True, slots=True)
class UniqueIdWait:
    waiter: int  # the rank that waited (a rank of its group)
    root: int  # the group's rank that creates the unique id and never published it
    default_group: bool  # the store key is the default group's: group ranks are global ranks
    error: str


def unique_id_wait(message: str) -> UniqueIdWait | None:
    """A rank that timed out waiting in the store for the NCCL unique id its group's root publishes when
    the root reaches the group's first collective: the root never got there (a hang at that collective,
    its root the one to look at). None when the message is not that, or the store failed otherwise (a
    connection reset: the store's host went away, a crash, not a wait)."""
    m = UNIQUE_ID_WAIT_RE.search(message)
    if m is None or not (TIMED_OUT_RE.search(m.group("error")) or _wait_cut(m.group("error"))):
        return None
    return UniqueIdWait(int(m.group("me")), int(m.group("root")), "default_pg" in m.group("error"),
                        m.group("error").strip())


def world_waits(waits: list[tuple[int | None, UniqueIdWait]], world: int | None) -> bool:
    """``waits``: (the global rank of the process that printed it, where the text gives it; the wait). The waits name
    one root, no printer's global rank differs from the group rank it waited as, and the waiters and the root are every
    rank of the world (``world``; unknown: ranks 0 to the highest named): the group is the whole world, so its ranks
    are global ranks (a key with no group's name, as releases before 2.2 print it, says nothing of the group)."""
    roots = {w.root for _, w in waits}
    if len(roots) != 1 or any(g is not None and g != w.waiter for g, w in waits):
        return False
    named = {w.waiter for _, w in waits} | roots
    n = world or max(named) + 1
    return n >= 2 and named == set(range(n))


def _wait_cut(error: str) -> bool:
    """The store's error text cut off (empty, or a first word of "wait timeout ..." left) where a log wrapped or
    trimmed the line: store->get only blocks in TCPStore's wait (its stack ends in doWait), so what ended it is the
    wait running out unless the text says the store's connection failed."""
    return "wait timeout".startswith(error.strip())


def no_rows_after_init(test_files: Iterable[str], files_with_rows: Iterable[str], init_complete: bool,
                       failed: bool, exit_known: bool) -> tuple[str, ...]:
    """nccl-tests outputs that printed no result row although NCCL's init completed: the benchmark prints
    a row as each size completes, the first right after init, so its first collective never completed.
    The job's end unknown and nothing failed: a possible hang (the output ends inside that collective);
    a failure or a known exit tells its own story instead."""
    if failed or exit_known or not init_complete:
        return ()
    done = set(files_with_rows)
    return tuple(sorted(f for f in set(test_files) if f not in done))


def after_stall(t: float | None, order: tuple[str, int], stall_t: float | None,
                stall_order: tuple[str, int] | None, skew_s: float = 1.0) -> bool:
    """A failure came after the stall: by time when both are known, else by line in the same file (one
    log's lines are in the order they were written). Unknown order is not after."""
    if t is not None and stall_t is not None:
        return t > stall_t + skew_s
    return stall_order is not None and order[0] == stall_order[0] and order[1] > stall_order[1]


@dataclass(frozen=True, slots=True)
class AfterInit:
    level: str  # "possible": the log only stops; nothing says the job stopped
    why: str


def ends_after_init(text_after_nccl: Iterable[int], init_complete: bool, collectives: bool, failed: bool,
                    exit_known: bool, excerpt: bool) -> AfterInit | None:
    """Logs that end right after NCCL's init: every NCCL rank's Init COMPLETE, then no line of the
    application in any file (``text_after_nccl``: per log file holding NCCL lines, the non-blank lines
    after its last NCCL line), no collective recorded, nothing failed, the job's end unknown. A healthy
    job goes on to print (its training, its result, its exit); one whose first collective hangs prints
    nothing more: a possible hang there. Any application line after init, a collective, a failure or a
    known exit: None (the log says more than where it stopped)."""
    after = list(text_after_nccl)
    if not after or any(n > 0 for n in after) or not init_complete or collectives or failed or exit_known or not excerpt:
        return None
    return AfterInit("possible", "every log ends right after NCCL's Init COMPLETE (or the launch of the first "
                     "collective), with no line of the application, no later collective and no exit after it: a "
                     "running job goes on to print")


# a progress bar (tqdm's) still at its start: "Processed prompts:   0%|          | 0/24 [00:00<?, ?it/s ...]", or
# one with no total, which tqdm draws as a count: "Sanity Checking: 0it [00:00, ?it/s]" (Lightning's first loop)
ZERO_BAR_RE = re.compile(r"(?:^|\s|:)(?:0%\|[^|]{0,80}\|\s*0/(?P<n>\d{1,9})\b|0it \[\d{1,3}:\d\d(?::\d\d)?, \?it/s\])")


SETUP_NCCL = "NCCL's init completed on every rank"
SETUP_GROUP = "every process joined the process group (NCCL's own lines not in the input)"


def frozen_at_start(last_lines: Iterable[str], setup_done: str | None, collectives: bool, failed: bool,
                    exit_known: bool) -> AfterInit | None:
    """An input one of whose files ends at a progress bar still at 0 of N (``last_lines``: each file's last line),
    the set-up done (``setup_done`` says what shows it: every communicator's Init COMPLETE, else a launcher's or
    torch's word that every process joined the group), no collective recorded, nothing failed, the end unknown: the
    program started its first unit of work, which needs the first collective, and never finished it (a frozen bar is
    what a user pastes of a stuck run; one caught at that instant is rare). Possible; None otherwise."""
    bar = next((m for t in last_lines if (m := ZERO_BAR_RE.search(t)) is not None), None)
    if bar is None or not setup_done or collectives or failed or exit_known:
        return None
    at = f"0 of {bar.group('n')}" if bar.group("n") else "0 (no total)"
    return AfterInit("possible", f"the input ends at a progress bar still at {at} after {setup_done}: the first "
                     "unit of work, and the first collective in it, never finished")


# a training loop's announcement that it starts, printed right before its first step: fairseq's and metaseq's
# "begin training epoch 1" / "Start iterating over samples", Composer's "Spinning the dataloaders" / "Starting training
# loop", the Hugging Face Trainer's "***** Running training *****" block, torchtitan's "Training starts at step 1"
LOOP_START_RE = re.compile(r"Start iterating over samples|\bbegin training epoch \d{1,6}\b|Spinning the dataloaders"
                           r"|Starting training loop|\*{5} Running training \*{5}|Total optimization steps = \d"
                           r"|Number of trainable parameters = \d|Training starts at step \d")


def loop_started(last_lines: Iterable[str], setup_done: str | None, world: int | None, collectives: bool,
                 failed: bool, exit_known: bool) -> AfterInit | None:
    """An input one of whose files ends at its training loop's announcement (``LOOP_START_RE`` on its last line), in
    a job whose set-up is done (``setup_done``) or whose stated world has two ranks or more (the announcement comes
    after the process group formed), no collective recorded, nothing failed, the end unknown: the first step, and the
    collectives in it, never finished (a program prints its steps as they end). Possible; None otherwise."""
    line = next((t for t in last_lines if LOOP_START_RE.search(t) is not None), None)
    if line is None or not (setup_done or (world or 0) >= 2) or collectives or failed or exit_known:
        return None
    said = LOOP_START_RE.search(line)
    assert said is not None
    after = setup_done or f"a stated world of {world} ranks"
    return AfterInit("possible", f"the input ends at the training loop's start ('{said.group(0)}') after {after}, "
                     "with no step printed: the first step, and the collectives in it, never finished")


@dataclass(frozen=True, slots=True)
class BarrierStall:
    culprits: tuple[int, ...]  # the ranks that never reached the barrier, when the counts pin them down
    suspects: tuple[int, ...]  # ranks of the world not seen waiting
    level: str
    why: str


def barrier_stall(waits: Iterable[tuple[int | None, int, int, bool]]) -> BarrierStall | None:
    """PyTorch's store-based barrier at init_process_group (``Waiting in store based barrier ... (world_size=W,
    worker_count=C ...)``, repeated every few seconds while it waits, and ``Timed out initializing process
    group in store based barrier``): ``waits`` are (rank, W, C, timed out) per line of one barrier. It
    stalled when it timed out (confirmed) or when a rank waited more than once and the count never reached
    the world (likely: the log stops inside the barrier). One round of waits is every start-up's: no claim.
    The ranks of the world never seen waiting are the culprits when they are exactly the W - C missing. More
    workers than the world (C > W) never complete it either: nobody is missing, too many came."""
    ws = list(waits)
    if not ws:
        return None
    world = max(w for _, w, _, _ in ws)
    count = max(c for _, w, c, _ in ws if w == world)
    if world <= 0 or count == world or world > 1 << 20:
        return None
    timed_out = any(t for *_, t in ws)
    seen = [r for r, *_ in ws if r is not None]
    repeated = len(seen) > len(set(seen))
    if not (timed_out or repeated):
        return None
    if count > world:  # the barrier waits for the count to equal the world: it never will
        return BarrierStall((), (), "confirmed" if timed_out else "likely",
                            f"{count} workers joined the store-based barrier of a world of {world}: more processes than "
                            "the world share this store (two jobs on one MASTER_ADDR:MASTER_PORT, a store a restarted job "
                            "reused, or a launcher that started each process more than once), so it never completes")
    waiting = set(seen)
    # the ranks never seen waiting, listed only when few (a claimed world of millions is not walked)
    suspects = tuple(r for r in range(world) if r not in waiting) if 0 <= world - len(waiting) <= MAX_LISTED else ()
    culprits = suspects if len(suspects) == world - count else ()
    level = "confirmed" if timed_out else "likely"
    why = (f"{count} of {world} workers reached the store-based barrier" +
           (" and it timed out" if timed_out else " and the ranks kept waiting") +
           (f"; ranks {', '.join(map(str, culprits))} never reported waiting" if culprits else
            "; which ranks are missing is not pinned down by the lines shown"))
    return BarrierStall(culprits, suspects, level, why)


def status_certainty(never: Iterable[int], sources: Mapping[int, str]) -> dict[str, str]:
    """How sure a never-joined hang is, from where each member's process-group status came (``sources``:
    rank -> "fr", "hook", "watchdog", "watchdog_timeout", "dump_signal" ...). confirmed: the culprits' own
    records say they are behind; likely: they left none, the others' records say where they wait;
    possible: the others' watchdog timeout lines alone (older releases: no PG status)."""
    culprits = list(never)
    if culprits and all(r not in sources for r in culprits):
        if all(s == "watchdog_timeout" for s in sources.values()):
            return {"level": "possible", "why": "watchdog timeout lines only: the ranks of the world missing from "
                    "them are suspects, not seen stopped"}
        return {"level": "likely", "why": "the culprits are the ranks of the world with no status of their own; the "
                "others' records say where they wait"}
    return {"level": "confirmed", "why": "every rank's own records: where it is and what it last issued"}


def lowest_at_stall(counts: Mapping[int, int]) -> tuple[int, ...]:
    """With a stall signal (a watchdog timeout, the hook's stall record) and no process-group status: the
    ranks at the lowest NCCL call count of a communicator, when the counts differ at all (equal counts:
    every rank is in the same collective, nobody is behind)."""
    if len(set(counts.values())) <= 1:
        return ()
    low = min(counts.values())
    return tuple(sorted(r for r, n in counts.items() if n == low))


def ends_in_setup(text_after_nccl: Iterable[int], nccl_processes: bool, communicators: bool, collectives: bool,
                  failed: bool, exit_known: bool, excerpt: bool) -> AfterInit | None:
    """Logs that end inside NCCL's set-up: NCCL processes printed their lines (bootstrap, topology, rings)
    but no communicator was ever reported (NCCL 2.5 to 2.12 print a communicator only at its Init COMPLETE),
    and nothing of the application, no collective, no failure and no exit follows: a possible hang in init.
    The same stop with a communicator is ``ends_after_init``'s; with an Init START, ``init_stall``'s."""
    after = list(text_after_nccl)
    if (not after or any(n > 0 for n in after) or not nccl_processes or communicators or collectives or failed
            or exit_known or not excerpt):
        return None
    return AfterInit("possible", "every log ends inside NCCL's set-up lines, before any communicator is reported, "
                     "with no line of the application, no collective and no exit after them")


def error_returned(warns: Iterable[tuple[str, int]], returns: Iterable[tuple[str, int, int]]) -> bool:
    """An NCCL WARN (``warns``: file, line) followed in the same log by NCCL's chain of an error code returned up the
    stack (``returns``: file, line, code; ``misc/socket.cc:561 -> 3``, a nonzero ncclResult_t): the call that warned
    failed and its caller is failing with it (an init or a connection set-up ending in an error), so a log that stops
    there stops at a failure on its way out, not inside a wait."""
    first: dict[str, int] = {}
    for f, line in warns:
        first[f] = min(line, first.get(f, line))
    return any(code > 0 and f in first and line > first[f] for f, line, code in returns)


@dataclass(frozen=True, slots=True)
class PartialInit:
    culprits: tuple[int, ...]  # communicator ranks that never printed Init COMPLETE while others did
    level: str
    why: str


def partial_init(nranks: int, started: Iterable[int], complete: Iterable[int], unranked: int,
                 others: Iterable[int] = ()) -> PartialInit | None:
    """A communicator of ``nranks`` of which some ranks printed Init COMPLETE and others did not, the log going
    no further: the ranks still in init hold up those done (their first collective waits for them). The ranks
    that never completed are the culprits when the log shows them: seen starting init (``started``, NCCL 2.13 on),
    seen printing NCCL lines under a rank a launcher's tag gives (``others``: mpirun's ``[1,r]``, a ``[rank r]:``),
    or, where NCCL prints a communicator only at its Init COMPLETE, exactly as many of the log's NCCL processes
    with no communicator line (``unranked``) as ranks of the world missing. Likely when every rank of the world is
    accounted for; possible when some ranks are not in the log at all (they may be stuck too). Ranks the log
    never shows are never named: one node's log of a two-node job says nothing of the other. None when no rank
    completed (every rank in init: ``init_stall``) or none is missing."""
    done = set(complete)
    if not done or nranks <= 0 or len(done) >= nranks or nranks - len(done) > MAX_LISTED:
        return None
    begun = set(started) | {r for r in others if 0 <= r < nranks}
    stuck = tuple(sorted(begun - done))
    if stuck:
        whole = len(done | begun) >= nranks
        return PartialInit(stuck, "likely" if whole else "possible",
                           f"{len(done)} of {nranks} ranks printed Init COMPLETE; these are in the log and never completed"
                           + ("" if whole else ", and some ranks of the communicator are not in the log at all"))
    missing = tuple(r for r in range(nranks) if r not in done)
    if unranked != len(missing):
        return None
    return PartialInit(missing, "likely", f"{len(done)} of {nranks} ranks printed Init COMPLETE; the log's other "
                       f"{unranked} NCCL processes printed no communicator (this NCCL prints one only at Init COMPLETE)")


@dataclass(frozen=True, slots=True)
class OddOneOut:
    culprits: tuple[int, ...]
    level: str
    why: str


def odd_one_out(waiting: Iterable[int], quiet: Iterable[int]) -> OddOneOut | None:
    """Ranks that timed out in one collective (``waiting``) beside ranks the same output shows that never did
    (``quiet``: lines of their own in the input, yet no timeout, no status, no failure and no end of their own): the two
    sides were not in the same collective, and the odd side is the one to look at.

    - One rank alone timed out while two or more others show no timeout: it issued a collective the others never
      issue (a barrier or a checkpoint's collective under ``if rank == 0``, an extra step) and waited alone.
    - A few quiet ranks (at most one in eight of those shown) while three or more others wait: the quiet ones were
      elsewhere (one rank's serial work: assembling a checkpoint, an evaluation) and never came to the collective.

    None when the sides are not that uneven (ranks of other groups waiting elsewhere, a log cut early)."""
    w, q = set(waiting), set(quiet) - set(waiting)
    if not w or not q:
        return None
    if len(w) == 1 and len(q) >= 2:
        (r,) = w
        return OddOneOut((r,), "likely", f"rank {r} alone timed out in it while {len(q)} other ranks shown in the same "
                         "output never did: it waited in a collective the others never issued")
    if len(w) >= 3 and len(q) <= max(1, (len(w) + len(q)) // 8):
        shown = ", ".join(map(str, sorted(q)))
        return OddOneOut(tuple(sorted(q)), "likely", f"{len(w)} ranks timed out in it while rank{'s' if len(q) > 1 else ''} "
                         f"{shown}, shown in the same output, never did: {'they were' if len(q) > 1 else 'it was'} "
                         "elsewhere and never joined it")
    return None



@dataclass(frozen=True, slots=True)
class BarrierUnreturned:
    waiting: tuple[int, ...]  # the ranks whose barrier start is the last line of their log
    level: str
    why: str


def barrier_unreturned(last_entered: Mapping[str, tuple[int, tuple[int, ...]]], last_lines: Mapping[str, int],
                       failed: bool, end_known: bool) -> BarrierUnreturned | None:
    """``last_entered``: per file, (the line of the last barrier start c10d warned of, the ranks it warned of in that
    file); ``last_lines``: each file's last line. A log whose very last line is a rank starting barrier() (c10d's
    warning that it guesses the GPU) never saw the barrier return: nothing after it, no failure, no known end of the
    job: a stall inside the barrier, every rank shown in it, no rank to blame from the text. A log that goes on after
    the warning (the program's next print, a step, an exit) shows the barrier returned."""
    if failed or end_known:
        return None
    ended = [f for f, (line, _) in last_entered.items() if last_lines.get(f) == line]
    if not ended or len(ended) != len(last_entered):
        return None
    waiting = tuple(sorted({r for f in ended for r in last_entered[f][1]}))
    if len(waiting) < 2:
        return None  # one rank's warning at the end of a paste: the others' logs may go on
    return BarrierUnreturned(waiting, "likely", "every log shown ends at c10d's warning that a rank starts barrier() "
                             "on a guessed GPU: no line after it, no failure and no exit")


@dataclass(frozen=True, slots=True)
class AheadAlone:
    culprits: tuple[int, ...]  # the ranks that never reached the prints the log ends at
    ahead: tuple[int, ...]  # the ranks whose prints the log ends at
    level: str
    why: str


AHEAD_REPEAT_MAX = 2  # a rank ahead alone stops at its next collective: a print it repeats more is its own loop


def ahead_alone(tail: Iterable[tuple[int, int, str]], printed_by: Mapping[str, Iterable[int]], ranks: Iterable[int],
                shared: int, ends_file: bool, failed: bool, end_known: bool) -> AheadAlone | None:
    """The program's prints that state their rank (``sources.rank_prints``: ``tail``, the last ones, as (line, rank,
    shape); ``printed_by``, the ranks that printed each shape; ``ranks``, every rank that printed one; ``shared``, how
    many shapes every one of them printed) end, with the log (``ends_file``), at prints of some ranks whose shapes the
    other ranks never printed: those never came to where the first went on to (a rank further along waits for them in
    its next collective). The program prints per rank (some shape every rank printed); nothing failed; the job's end is
    unknown; each rank ahead printed each of those shapes at most ``AHEAD_REPEAT_MAX`` times (a rank that loops on
    alone, step after step, is one whose program prints alone: the others were with it). Possible; None otherwise."""
    world = set(ranks)
    if failed or end_known or not ends_file or shared < 1 or len(world) < 2:
        return None
    front: list[tuple[int, int, str]] = []
    for entry in reversed(list(tail)):
        if set(printed_by.get(entry[2], ())) >= world:
            break
        front.append(entry)
    if not front:
        return None
    reached = set().union(*(set(printed_by.get(s, ())) for _, _, s in front))
    behind = tuple(sorted(world - reached))
    shapes = [(r, s) for _, r, s in front]
    if not behind or any(shapes.count(k) > AHEAD_REPEAT_MAX for k in shapes):
        return None
    ahead = tuple(sorted({r for _, r, _ in front}))
    return AheadAlone(behind, ahead, "possible",
                      f"the log ends at prints of rank{'s' if len(ahead) > 1 else ''} {', '.join(map(str, ahead))} that "
                      f"rank{'s' if len(behind) > 1 else ''} {', '.join(map(str, behind))}, whose earlier prints are in the "
                      "log, never made: nothing after, no failure, no exit")


BEHIND_MAX = 2  # prints a rank behind may lack: further behind, its program prints otherwise, not later


def behind_the_rest(made: Mapping[int, int], ends_file: bool, failed: bool, end_known: bool) -> AheadAlone | None:
    """The program's prints that state their rank, counted per rank over the shapes every rank printed (``made``), end
    with the log (``ends_file``) with a minority of three ranks or more one or two prints short of the others, who all
    made the same number: the ranks behind never got to their next print (a rank of a loop that prints per step, still
    in the step the others finished; they wait for it in the next collective). Nothing failed, the job's end unknown.
    Possible; None otherwise."""
    if failed or end_known or not ends_file or len(made) < 3:
        return None
    top = max(made.values())
    behind = tuple(sorted(r for r, n in made.items() if n < top))
    ahead = tuple(sorted(r for r, n in made.items() if n == top))
    if not behind or len(behind) * 2 >= len(made) or any(top - made[r] > BEHIND_MAX for r in behind):
        return None
    return AheadAlone(behind, ahead, "possible",
                      f"the log ends with rank{'s' if len(behind) > 1 else ''} {', '.join(map(str, behind))} a "
                      f"print or two short of rank{'s' if len(ahead) > 1 else ''} {', '.join(map(str, ahead[:8]))} (the "
                      "program's own per-rank prints, which every rank makes alike): nothing after, no failure, no exit")


@dataclass(frozen=True, slots=True)
class BusyElsewhere:
    """A rank that went on with its own work while the others waited in a collective for it."""

    rank: int
    level: str
    why: str


def busy_elsewhere(waiting: Iterable[int], world: int | None, printers: Iterable[int | None]) -> BusyElsewhere | None:
    """Ranks ``waiting`` timed out in one collective (their watchdogs), and progress prints went on after their timeout in
    the same file (``printers``: the rank each such print names, None where it names none, as a main process's
    progress bar does): the process printing them was not in the collective; the others waited for it. Its rank is the
    one the prints name; for prints with no rank, the one rank of the world not waiting, else the main process (rank
    0, which a framework's "main process first" step leaves working while the others wait in a barrier) when it is
    not among the waiting (possible). None otherwise."""
    waits, printed = set(waiting), list(printers)
    named = {r for r in printed if r is not None and r not in waits}
    if len(named) == 1:
        r = named.pop()
        return BusyElsewhere(r, "likely", f"rank {r}'s own progress prints go on after the others' watchdog timeouts")
    if named or not any(r is None for r in printed) or not waits:
        return None
    rest = sorted(set(range(world)) - waits) if world else []
    if len(rest) == 1:
        return BusyElsewhere(rest[0], "likely", f"progress prints go on after the watchdog timeouts of every other rank "
                             f"of the world of {world}: rank {rest[0]}, the only one not waiting, was printing them")
    if 0 not in waits:
        return BusyElsewhere(0, "possible", "a progress bar with no rank goes on after the others' watchdog timeouts: the "
                             "main process (rank 0) printing it, as a framework's main-process-first step does")
    return None


def sweep_stopped(last_row_line: int, last_line: int, failed: bool, exit_known: bool) -> bool:
    """An nccl-tests output whose sweep stops: its last line is a result row (no summary after it, which a finished
    benchmark prints, nor an error, which a failed one prints), nothing failed and the run's end is unknown. The
    benchmark prints each size's row as it completes: the next size's collective never completed (a possible hang)."""
    return not failed and not exit_known and last_row_line > 0 and last_line == last_row_line
