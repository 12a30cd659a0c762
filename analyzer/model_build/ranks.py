"""Processes and global ranks, the world size and the job's versions.

NCCL's ``[dev]`` is not the rank: a process's global rank is its rank in the first top-level
communicator of the world's size, else what the hook, a wrapper prefix or the launcher says.
"""
from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field

from ..model import Evidence, Job, Process, Setting
from ..sources import records as R
from ..sources.hook_jsonl import HookType
from ..sources.lines import prefix_rank
from ..sources.torch_log import SRUN_TASK_ENDED, NodeCount
from .gather import Gathered
from .launched import launched_world
from .values import ProcKey, count_ranks, ev

# More ranks than any NCCL job has run (the largest published are ~10^5 GPUs). A claim past this
# (one damaged or hostile line saying ``nranks 1000000000000``) is not modelled, so that nothing
# downstream allocates by it; sizes below it are cross-checked against the processes seen (``_nccl_ranks``).
MAX_RANKS = 1 << 20
# A world size below it, whatever claimed it (Init lines, a dump's default group, the hook's start record, a printed
# size, the highest rank seen), is believed when the ranks it adds beyond those the input shows are at most this many,
# or as many as it shows: a record claiming 2^20 ranks beside one seen sizes nothing downstream (rank lists, tables,
# the report's ranks), and a rank 0 log of a 16,384-rank job still tells the world.
WORLD_UNSEEN_MAX = 1 << 16


@dataclass
class Ranks:
    proc_rank: dict[ProcKey, int] = field(default_factory=dict)
    world: int | None = None
    world_lines: tuple[Evidence, ...] = ()  # the lines that claim ``world``
    hook_versions: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # a world size claimed and not believed


def drop_implausible(g: Gathered) -> list[str]:
    """Remove the communicator views whose rank or size no job could have; a problem line for each."""
    problems = []
    for ck, cl in list(g.comms.items()):
        if cl.nranks > MAX_RANKS or cl.rank >= max(cl.nranks, 1):
            del g.comms[ck]
            if g.current.get(cl.proc) is cl:
                del g.current[cl.proc]
            problems.append(f"process {cl.proc[0]}:{cl.proc[1]} claims rank {cl.rank} of {cl.nranks} in communicator "
                            f"{cl.ptr} (line {cl.first_line}): not a size any job has; that communicator is left out")
    return problems[:64]


def assign_ranks(g: Gathered) -> Ranks:
    out = Ranks()
    top_nranks = _nccl_ranks(g, out.proc_rank)
    hook_world = _hook_ranks(g, out)
    shared = wrapper_tasks(g.wrapper_rank, g.wrapper_dev)
    for key, r in g.wrapper_rank.items():
        if key not in shared:
            out.proc_rank.setdefault(key, r)
    pid_rank_launcher = {le.pid: le.rank for le in g.launcher if le.pid is not None and le.rank is not None}
    for key in g.proc_first_seen:
        if key not in out.proc_rank and key[1] in pid_rank_launcher:
            out.proc_rank[key] = pid_rank_launcher[key[1]]  # type: ignore[assignment]
    out.world = _world(g, top_nranks, hook_world)
    out.world_lines = _world_lines(g, out.world, top_nranks, hook_world)
    if out.world is not None:
        shown = sum(1 for r in _seen_ranks(g, out.proc_rank) if 0 <= r < out.world)
        if out.world - shown > max(WORLD_UNSEEN_MAX, shown):
            where = f" ({out.world_lines[0].file}:{out.world_lines[0].line})" if out.world_lines else ""
            out.problems.append(f"a world of {out.world} ranks is claimed{where} beside {shown} rank"
                                f"{'s' if shown != 1 else ''} the input shows: not believed; the ranks shown are judged")
            out.world, out.world_lines = None, ()
    return out


def wrapper_tasks(tags: dict[ProcKey, int], devices: dict[ProcKey, int | None]) -> set[ProcKey]:
    """Processes whose launcher tag is no rank of theirs: one tag (mpirun's ``[1,0]<stdout>:``) in front of the NCCL
    lines of several processes of one host on different GPUs, all at once. The launcher started one task that started
    them (``torch.distributed.launch`` inside one MPI task): the tag is that task's, and each process's rank is what its
    own lines say. (A rank's process started again, a restart, keeps its device.)"""
    by_tag: dict[tuple[str, int], list[ProcKey]] = defaultdict(list)
    for key, tag in tags.items():
        by_tag[(key[0], tag)].append(key)
    out: set[ProcKey] = set()
    for keys in by_tag.values():
        devs = [devices.get(k) for k in keys]
        if len(keys) > 1 and None not in devs and len(set(devs)) == len(devs):
            out.update(keys)
    return out


def _seen_ranks(g: Gathered, proc_rank: dict[ProcKey, int]) -> set[int]:
    """The global ranks the input shows: its processes', the hook's, the dumps', a launcher's and PyTorch's lines'."""
    seen = set(proc_rank.values()) | {h.rank for h in g.hook if isinstance(h.rank, int)}
    seen |= {f.rank for f in g.frs if f.rank is not None} | {c.rank for c in g.completions if c.rank is not None}
    return seen | {le.rank for le in g.launcher if le.rank is not None} | _logged_ranks(g)


def _nccl_ranks(g: Gathered, proc_rank: dict[ProcKey, int]) -> int:
    """Ranks from Init lines: each process's rank in its first top-level communicator of the world's size.

    The world's size is the size of the top-level communicator the most processes are in (the
    larger on a tie): one line claiming a bigger world than the processes seen agree on never wins."""
    by_proc: dict[ProcKey, list] = {}
    procs_of_size: dict[int, set[ProcKey]] = {}
    for cl in g.comms.values():
        by_proc.setdefault(cl.proc, []).append(cl)
        if cl.parent_ptr is None:
            procs_of_size.setdefault(cl.nranks, set()).add(cl.proc)
    top_nranks = max(procs_of_size, key=lambda n: (len(procs_of_size[n]), n), default=0)
    for key, cls in by_proc.items():
        roots = sorted((c for c in cls if c.parent_ptr is None and c.nranks == top_nranks), key=lambda c: c.first_line)
        if roots:
            proc_rank[key] = roots[0].rank
    return top_nranks


def _hook_ranks(g: Gathered, out: Ranks) -> int | None:
    """Ranks, world size, versions and settings from the hook's start records."""
    hook_world = None
    for h in g.hook:
        if h.type != HookType.START or not isinstance(h.rank, int):
            continue
        host = str(h.data.get("host", ""))
        pid = h.data.get("pid")
        if isinstance(pid, int):
            for key in list(g.proc_first_seen) + [(host, pid)]:
                if key[1] == pid and (not host or key[0] == host or key[0] in host or host in key[0]):
                    out.proc_rank.setdefault(key, h.rank)
        world = h.data.get("world")
        if isinstance(world, int) and 0 < world <= MAX_RANKS:
            hook_world = world
        for k in ("torch", "nccl", "cuda"):
            if h.data.get(k):
                out.hook_versions.setdefault(k, str(h.data[k]))
        for k, v in (h.data.get("env") or {}).items():
            if isinstance(v, str):
                g.settings.setdefault(k, Setting(k, v, "wrapper", ev(h)))
    return hook_world


def _world(g: Gathered, top_nranks: int, hook_world: int | None) -> int | None:
    world = top_nranks or None
    for fr in g.frs:
        for cfg in fr.pg_config.values():
            if isinstance(cfg, dict) and str(cfg.get("desc")) == "default_pg":
                n = count_ranks(cfg.get("ranks"))
                if n and n <= MAX_RANKS and (world is None or n > world):
                    world = n
    world = world or hook_world or _printed_world(g) or launched_world(
        (r.launcher, r.count) for r in g.torch_recs if isinstance(r, R.LaunchedTasks))
    if world is None:
        ranks_seen = [le.rank for le in g.launcher if le.rank is not None] + [
            f.rank for f in g.frs if f.rank is not None] + [c.rank for c in g.completions if c.rank is not None]
        ranks_seen = [r for r in ranks_seen if 0 <= r < MAX_RANKS]
        if ranks_seen:  # a launcher's summary, dumps or completions: at least as many ranks as the highest one shown
            ranks_seen += [r for r in _logged_ranks(g) if 0 <= r < MAX_RANKS]  # (a rank's own tagged lines too)
            world = max(ranks_seen) + 1
    return world


WORLD_LINES = 2  # the lines kept as the world size's evidence


def _world_lines(g: Gathered, world: int | None, top_nranks: int, hook_world: int | None) -> tuple[Evidence, ...]:
    """The lines that claim ``world`` (as ``_world`` chose it), the first ``WORLD_LINES`` of its source: the Init
    lines of the top-level communicators of that size, the default group of a Flight Recorder dump (a dump has no
    lines: line 0), the hook's start records, a launcher's or wrapper's printed size, else the record of the
    highest rank seen."""
    if world is None:
        return ()
    out: list[Evidence] = []
    if world == top_nranks:
        inits = sorted((cl.init_line for cl in g.comms.values()
                        if cl.parent_ptr is None and cl.nranks == world and cl.init_line is not None),
                       key=lambda e: (e.file, e.line))
        out += inits[:WORLD_LINES]
    for fr in g.frs:
        for pg, cfg in fr.pg_config.items():
            if len(out) < WORLD_LINES and isinstance(cfg, dict) and str(cfg.get("desc")) == "default_pg" \
                    and count_ranks(cfg.get("ranks")) == world:
                out.append(Evidence(fr.file, 0, f"pg_config[{pg}]: default_pg of {world} ranks"))
    if not out and world == hook_world:
        out += [ev(h) for h in g.hook if h.type == HookType.START and h.data.get("world") == world][:WORLD_LINES]
    if not out:
        out += [ev(r) for r in g.torch_recs if isinstance(r, R.WorldSize) and r.world_size == world][:WORLD_LINES]
    if not out:
        out += [ev(r) for r in g.torch_recs if isinstance(r, R.LaunchedTasks) and r.count == world][:WORLD_LINES]
    if not out:
        last = world - 1
        out += [ev(le) for le in g.launcher if le.rank == last][:1] + [ev(c) for c in g.completions if c.rank == last][:1]
        out += [Evidence(f.file, 0, f"Flight Recorder dump of rank {last}") for f in g.frs if f.rank == last][:1]
        out += [ev(r) for r in g.torch_recs if r.rank == last and last in _logged_ranks(g)][:1]
    return tuple(out[:WORLD_LINES])


def _printed_world(g: Gathered) -> int | None:
    """The world size a launcher or wrapper printed (``WorldSize``), the one printed most (the larger on a
    tie), when no NCCL communicator, hook or dump gave one."""
    sizes = [r.world_size for r in g.torch_recs if isinstance(r, R.WorldSize) and 0 < r.world_size <= MAX_RANKS]
    return max(sorted(set(sizes)), key=lambda n: (sizes.count(n), n)) if sizes else None


def _logged_ranks(g: Gathered) -> set[int]:
    """Global ranks PyTorch's own lines speak for, with no NCCL process of theirs in the input: a launcher's
    rank tag (``[rank3]:``, ``[1,3]<stdout>:``, ``(... rank=3 pid=..)``) on an error, traceback or watchdog
    line, or ``[PG 0 Rank 3]`` of the default group (``[PG 2 Rank 1]`` is a rank in group 2, not global)."""
    out: set[int] = set()
    for r in g.torch_recs:
        if r.rank is None or not 0 <= r.rank < MAX_RANKS or r.rank in out:
            continue
        if r.pg in (None, "0") or prefix_rank(r.text) == r.rank:
            out.add(r.rank)
    return out


CUDA_DEV_RE = re.compile(r"\bcudaDev (\d{1,4})\b")


def _more_devices(g: Gathered, proc_rank: dict[ProcKey, int], world: int | None) -> list[Process]:
    """A process that drives several GPUs, one thread each (XLA, TensorFlow, nccl-tests -t), holds one rank of the
    world's top-level communicator per GPU: each rank after its first, on another cudaDev, is a process entry of its
    own (same host and pid), not a rank missing from the input."""
    out: dict[tuple[ProcKey, int], Process] = {}
    for (key, _), cl in g.comms.items():
        first = proc_rank.get(key)
        if first is None or cl.parent_ptr is not None or not world or cl.nranks != world or cl.rank == first:
            continue
        dev = CUDA_DEV_RE.search(cl.init_line.text) if cl.init_line is not None else None
        if dev is None or int(dev.group(1)) == g.proc_dev.get(key, (None, None))[0]:
            continue  # another communicator of the same GPU (a second group of the world's size): the same rank
        out.setdefault((key, cl.rank), Process(key[0], key[1], cl.rank, int(dev.group(1)), None,
                                               cl.init_line or g.proc_first_seen.get(key)))
    return list(out.values())


def _printed_versions(g: Gathered) -> tuple[str | None, str | None]:
    """(torch, NCCL) versions printed in PyTorch's own lines (an error's ``NCCL version 2.21.5``, collect_env)."""
    torch = next((r.torch for r in g.torch_recs if isinstance(r, R.TorchVersionLine) and r.torch), None)
    nccl = next((r.nccl for r in g.torch_recs if isinstance(r, R.TorchVersionLine) and r.nccl), None)
    return torch, nccl


def build_job(g: Gathered, ranks: Ranks, nccl_torch_version: str | None) -> Job:
    proc_rank = ranks.proc_rank
    processes = []
    hosts = sorted({k[0] for k in g.proc_first_seen if k[0]})
    for key in sorted(g.proc_first_seen, key=lambda k: (proc_rank.get(k, 1 << 30), k)):
        dev, bus = g.proc_dev.get(key, (None, None))
        processes.append(Process(key[0], key[1], proc_rank.get(key), dev, bus, g.proc_first_seen[key]))
    processes += _more_devices(g, proc_rank, ranks.world)
    held = {p.rank for p in processes if p.rank is not None}
    held |= {h.rank for h in g.hook if isinstance(h.rank, int)} | {f.rank for f in g.frs if f.rank is not None}
    held |= {c.rank for c in g.completions if c.rank is not None}  # ranks the hook or a dump shows already
    limit = ranks.world if ranks.world else MAX_RANKS
    processes += [Process("", 0, r) for r in sorted(_logged_ranks(g) - held) if r < limit]
    values = list(g.nccl_versions.values())
    nccl_version = max(sorted(set(values)), key=values.count) if values else None
    printed_torch, printed_nccl = _printed_versions(g)
    nccl_version = nccl_version or (nccl_torch_version if nccl_torch_version and nccl_torch_version[0].isdigit()
                                    else None) or ranks.hook_versions.get("nccl") or printed_nccl
    torch_version = ranks.hook_versions.get("torch") or printed_torch
    return Job(
        world_size=ranks.world, hosts=tuple(hosts), processes=tuple(processes), nccl_version=nccl_version,
        torch_version=torch_version,
        cuda_version=g.cuda_version or ranks.hook_versions.get("cuda") or torch_build_cuda(torch_version),
        settings=g.settings, nccl_versions={k[1]: v for k, v in g.nccl_versions.items() if k[1]},
        exit_code=g.exit_code, nnodes=_nodes(g, ranks, hosts), world_lines=ranks.world_lines,
        version_lines=_version_lines(g, nccl_version),
    )


TORCH_CUDA_BUILD_RE = re.compile(r"\+cu(?P<major>\d{1,2})(?P<minor>\d)(?![\w.])")


def torch_build_cuda(torch: str | None) -> str | None:
    """The CUDA release a torch wheel was built with, from its local version (``2.11.0+cu130`` -> ``13.0``,
    ``2.5.1+cu124`` -> ``12.4``, ``1.13.1+cu117`` -> ``11.7``): the CUDA runtime the wheel ships and the job runs on,
    where no NCCL line, hook record or environment record states the release. A ROCm or CPU build (``+rocm6.2``,
    ``+cpu``) or a release with no local version says nothing."""
    m = TORCH_CUDA_BUILD_RE.search(torch or "")
    return f"{int(m.group('major'))}.{m.group('minor')}" if m else None


def _version_lines(g: Gathered, nccl_version: str | None) -> dict[str, Evidence]:
    """NCCL version -> the first line that printed it: NCCL's own version lines; for the job's version when
    none printed it, the PyTorch line, the hook's start record or the Flight Recorder dump (line 0) that named it."""
    out = dict(g.version_lines)
    if nccl_version and nccl_version not in out:
        said = next((ev(r) for r in g.torch_recs if isinstance(r, R.TorchVersionLine) and r.nccl == nccl_version), None) \
            or next((ev(h) for h in g.hook if h.type == HookType.START and str(h.data.get("nccl") or "") == nccl_version), None) \
            or next((Evidence(f.file, 0, f"comm_lib_version {f.comm_lib_version}") for f in g.frs
                     if f.comm_lib_version and nccl_version in str(f.comm_lib_version)), None)
        if said is not None:
            out[nccl_version] = said
    return out


def _short_host(host: str) -> str:
    """A host's name without its domain (``gh-c411.cluster.edu`` -> ``gh-c411``): srun names a node short, torchrun's
    failure table by its full name. An address stays whole."""
    return host if IP_RE.fullmatch(host) else host.split(".", 1)[0]


IP_RE = re.compile(r"[\d.]{7,15}|[0-9A-Fa-f:]{2,39}")


def _nodes(g: Gathered, ranks: Ranks, hosts: list[str]) -> int | None:
    """Nodes as NCCL states them for the world communicator (``nNodes``, 2.7+): right when the files
    hold only some ranks; else as a launcher printed them (DeepSpeed's ``nnodes=``, torchrun's one node), or the hosts
    seen (NCCL's line heads, else torchrun's failure table)."""
    stated = [cl.nnodes for cl in g.comms.values() if cl.nnodes and cl.parent_ptr is None and cl.nranks == ranks.world]
    if stated:
        return max(stated)
    printed = [r.nnodes for r in g.torch_recs if isinstance(r, NodeCount) and 0 < r.nnodes <= MAX_RANKS]
    # where no NCCL line names a host: the hosts torchrun's failure table or srun's task exits name (``host : node-a``,
    # ``srun: error: node-a: task 1: ...``), with the nodes whose slurmstepd said the step was cancelled (``ON node-c``)
    launched = {x.host for x in g.launcher if x.host and (x.rank is not None
                                                          or (x.traceback or "").startswith(SRUN_TASK_ENDED))}
    cancelled = {r.host for r in g.torch_recs if isinstance(r, R.JobCancelled) and r.host} if launched else set()
    seen = len(hosts) or len({_short_host(h) for h in launched | cancelled})
    return max(printed + [seen]) or None  # a launcher's count, as one node's log shows one host of it
