"""The rank layout a launcher gave: global ranks claimed twice while others are never claimed.

Each process announces the global rank it took (Lightning's ``initializing ddp: GLOBAL_RANK: r, MEMBER: m/N``).
When the launcher starts one task per node and each task spawns its node's processes as if it were the only
node (srun without ``--ntasks-per-node``, every node given node rank 0), the processes of every node number
themselves 0..k-1: each of those ranks is held by several processes and the ranks above are held by none, so
the rendezvous can never complete. The rule (pure): some rank of the world is claimed more than once AND some
rank of the world is claimed by nobody. Duplicates with the world complete are two runs in one input (a
restart), not this; a world not known says nothing.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import islice

MAX_WORLD = 1 << 20
MAX_LISTED = 16  # unclaimed ranks named (the count says the rest)


@dataclass(frozen=True, slots=True)
class Layout:
    """Ranks claimed more than once ((rank, claims), the first MAX_LISTED), how many ranks of the world no process
    claimed and the first MAX_LISTED of them."""

    doubled: tuple[tuple[int, int], ...]
    unclaimed: tuple[int, ...]
    unclaimed_count: int
    world: int


def doubled_ranks(claims: Iterable[int], world: int | None) -> Layout | None:
    """``claims``: one global rank per process's announcement; ``world``: the world size the job states."""
    if world is None or not 1 < world <= MAX_WORLD:
        return None
    count = Counter(r for r in claims if 0 <= r < world)
    doubled = tuple(sorted((r, n) for r, n in count.items() if n > 1))[:MAX_LISTED]
    if not doubled or len(count) == world:
        return None
    unclaimed = tuple(islice((r for r in range(world) if r not in count), MAX_LISTED))
    return Layout(doubled, unclaimed, world - len(count), world)


LAUNCHER_ORDER = ("torchrun", "mpirun", "srun")  # the launcher that starts the ranks is the innermost one shown


@dataclass(frozen=True, slots=True)
class FewTasks:
    """A launcher command started ``tasks`` processes (``launcher``) for a world of ``world``: the store-based barrier
    of init_process_group waits for ``world`` workers and only ``arrived`` came."""

    launcher: str
    tasks: int
    world: int
    arrived: int


def too_few_tasks(launched: Iterable[tuple[str, int]], world: int, arrived: int) -> FewTasks | None:
    """``launched``: (launcher, processes it starts) of each launcher command in the text; ``world`` / ``arrived``: the
    store-based barrier's world_size and worker_count. The innermost launcher shown (torchrun inside srun starts the
    ranks) decides, with one count; fewer processes than the world, and no more arrived than were started, is the
    launch configured wrong: the ranks it never started cannot arrive, no rank is at fault."""
    by: dict[str, set[int]] = {}
    for name, n in launched:
        if n > 0:
            by.setdefault(name, set()).add(n)
    chosen = next((k for k in LAUNCHER_ORDER if k in by), None)
    if chosen is None or len(by[chosen]) != 1 or not 0 < world <= MAX_WORLD:
        return None
    name = chosen
    tasks = next(iter(by[name]))
    if name == "torchrun" and "srun" in by:
        return None  # torchrun per srun task: the tasks x processes product is not the command's to say
    if tasks < world and 0 <= arrived <= tasks:
        return FewTasks(name, tasks, world, arrived)
    return None


@dataclass(frozen=True, slots=True)
class OneNodeStarted:
    """Of a world of ``world`` on ``nodes`` nodes, only the first node's ``per_node`` ranks ever claimed a rank."""

    per_node: int
    world: int
    nodes: int


def first_node_only(claims: Iterable[int], world: int | None, nodes: int | None) -> OneNodeStarted | None:
    """``claims``: the global ranks the processes announced (Lightning's ``GLOBAL_RANK: r, MEMBER: m/N``); ``world``
    and ``nodes``: the world size and the node count the job states. Every rank of the first node claimed, none of any
    other node, in a console that gathers every node's output (a batch job's): only the first node ran the program
    (a batch script that starts it without srun runs on the first node of the allocation only)."""
    if world is None or nodes is None or not 1 < nodes <= world <= MAX_WORLD or world % nodes:
        return None
    per = world // nodes
    seen = set(claims)
    if seen != set(range(per)):
        return None
    return OneNodeStarted(per, world, nodes)


# one srun line that runs a multi-machine launcher with a node rank written out: "srun bash -c 'accelerate launch
# --num_machines 2 --machine_rank 0 ...'", "srun torchrun --nnodes=2 --node_rank=0 ...": every task gets the same rank
SRUN_CMD_RE = re.compile(r"(?:^|[\s;&|+$'\"(])srun\s(?P<args>[^\n]{0,2000})")
LAUNCHER_WORD_RE = re.compile(r"\b(?:accelerate|torchrun|python3?|bash|sh|deepspeed)\b")
MACHINES_FLAG_RE = re.compile(r"--(?:num[_-]machines|nnodes)(?:=| +)['\"]?(?P<n>\d{1,5})\b")
NODE_RANK_FLAG_RE = re.compile(r"--(?:machine[_-]rank|node[_-]rank)(?:=| +)['\"]?(?P<r>\d{1,5})\b")
ONE_NODE_RE = re.compile(r"(?:^|\s)(?:-w\s?\S|--nodelist[= ]|-N\s?1\b|--nodes[= ]1\b|-n\s?1\b|--ntasks[= ]1\b)")


def fixed_node_rank(lines: Iterable[str]) -> tuple[str, str] | None:
    """(the node-rank flag as written, ``--machine_rank 0``, and its line) where a launch line runs, through srun over more than one
    task, a launcher told of several machines with one literal node rank: every node's launcher claims that rank and
    waits for a partner that never comes. None where srun is pinned to one node or task (``-w``, ``-N 1``, ``-n 1``:
    one launch per node, each with its own rank) or the rank is left to a variable."""
    for line in lines:
        m = SRUN_CMD_RE.search(line)
        if m is None:
            continue
        args = m.group("args")
        w = LAUNCHER_WORD_RE.search(args)
        if w is None or ONE_NODE_RE.search(args[:w.start()]):
            continue
        machines, rank = MACHINES_FLAG_RE.search(args), NODE_RANK_FLAG_RE.search(args)
        if machines is not None and int(machines.group("n")) > 1 and rank is not None:
            return rank.group(0).replace("'", "").replace('"', ""), line
    return None


@dataclass(frozen=True, slots=True)
class SharedNodeRank:
    node_rank: int
    nnodes: int
    machines: tuple[str, ...]


def shared_node_rank(stated: Iterable[tuple[int, int, str]]) -> SharedNodeRank | None:
    """``stated``: (nodes, node rank, machine) as each machine's launcher said it runs. Two or more machines of a job of
    several nodes saying the same node rank: each believes it is that node (NODE_RANK, --node_rank, machine_rank given
    alike, or the variable it came from never set) and waits at the rendezvous for nodes of the other ranks that never
    come. None otherwise."""
    by: dict[tuple[int, int], set[str]] = {}
    for nnodes, rank, machine in stated:
        if nnodes > 1:
            by.setdefault((nnodes, rank), set()).add(machine)
    for (nnodes, rank), machines in sorted(by.items()):
        if len(machines) >= 2:
            return SharedNodeRank(rank, nnodes, tuple(sorted(machines))[:8])
    return None
