"""What the input does not cover, or covers twice: ranks with no input at all, ranks claimed by two
processes, processes that belong to no communicator of the job, logs of more than one job.

These findings (kind ``input``) argue for no verdict. They say what the verdict could not see, so a
missing rank is reported as missing rather than judged, and a folder that mixes two runs is said to
do so instead of being read as one job.
"""
from __future__ import annotations

from collections import defaultdict

from ..model import Communicator, EventKind, Evidence, Finding, FindingKind, Format, Run, Severity, Verdict
from ..nccl.failures import classify_in_area
from ..sources.nccl_tests import device_process

MAX_LISTED = 16
MAX_EVIDENCE = 8  # lines kept as a finding's evidence


def first_lines(run: Run, procs: list[str]) -> tuple[Evidence, ...]:
    """The first NCCL line of each of ``procs`` (``host:pid``), in that order."""
    by_name = {f"{p.host}:{p.pid}": p.evidence for p in run.job.processes if p.evidence is not None}
    return tuple(e for e in (by_name.get(p) for p in procs) if e is not None)[:MAX_EVIDENCE]


def init_lines(comms: list[Communicator]) -> tuple[Evidence, ...]:
    """One Init line of each of ``comms`` (its lowest rank's), in that order."""
    return tuple(c.init_lines[min(c.init_lines)] for c in comms if c.init_lines)[:MAX_EVIDENCE]


def ranks_with_input(run: Run) -> set[int]:
    """Global ranks that some input speaks for: an NCCL process, a collective row (Flight Recorder,
    hooks, NCCL COLL lines), a process-group status, an exit record, a stack or a rank-tagged log line."""
    seen: set[int] = {p.rank for p in run.job.processes if p.rank is not None}
    df = run.collectives
    if len(df):
        seen |= {int(r) for r in df["rank"].unique() if int(r) >= 0}
    seen |= {s.rank for s in run.pg_status}
    seen |= {e.rank for e in run.exits if e.rank is not None}
    seen |= set(run.stacks)
    seen |= {e.rank for e in run.events if e.rank is not None}
    return seen


def ranks_text(ranks: list[int]) -> str:
    """``[0, 1, 2, 5, 7, 8]`` -> ``0-2, 5, 7-8``; long lists are cut."""
    parts: list[str] = []
    start = prev = None
    for r in sorted(ranks):
        if start is None:
            start = prev = r
        elif prev is not None and r == prev + 1:
            prev = r
        else:
            parts.append(f"{start}-{prev}" if prev != start else str(start))
            start = prev = r
    if start is not None:
        parts.append(f"{start}-{prev}" if prev != start else str(start))
    more = len(parts) - MAX_LISTED
    return ", ".join(parts[:MAX_LISTED]) + (f" and {more} more ranges" if more > 0 else "")


def _rank_checked_in_twice(run: Run) -> bool:
    """NCCL's bootstrap root saw one rank check in twice (``Bootstrap Root : rank 0 of 2 ranks has already checked
    in``, a WARN or PyTorch's "Last error"): the processes claiming one rank are one job started wrong (duplicated
    RANK values, a launcher started twice), the config detector's finding, not two jobs mixed in the input."""
    for e in run.events:
        if e.kind not in (EventKind.NCCL_WARN, EventKind.DIST_ERROR):
            continue
        text = f"{e.text} {e.data.get('last_error') or ''}"
        if "has already checked in" in text:
            k = classify_in_area(text, "bootstrap")
            if k is not None and k.id == "bootstrap-rank-twice":
                return True
    return False


def _distinct_processes(procs: list[str]) -> list[str]:
    """``host:pid`` names less those that are another's with text glued in front of the host (one
    damaged line: ``0.00009vm:821`` is ``vm:821``): the same pid, one host ending with the other."""
    out: list[str] = []
    for p in sorted(set(procs), key=len):
        host, _, pid = p.rpartition(":")
        if not any(q.rpartition(":")[2] == pid and host.endswith(q.rpartition(":")[0]) for q in out):
            out.append(p)
    return out


def _single_node(c: Communicator) -> bool:
    """A communicator of one node: NCCL says ``nNodes 1``; releases that print no nNodes: its connections are
    known and none goes over the network."""
    if c.nnodes is not None:
        return c.nnodes == 1
    return bool(c.connections) and not any(x.transport.startswith(("NET", "COLLNET")) for x in c.connections)


def _separate_jobs(run: Run, dup: dict[int, list[str]]) -> Finding | None:
    """One launch that started one single-node job per host instead of one job across them: in ONE output
    (the launcher's stream), every root communicator is of one node (``_single_node``), all of the same size, each with its
    own commId on its own host, and each rank claimed twice is claimed from different hosts. Two runs mixed in
    a folder look otherwise (other files; a restart claims its ranks again from the same host)."""
    roots = [c for c in run.communicators if c.parent is None]
    if len({f for f, _ in run.files}) != 1 or len(roots) < 2:
        return None
    if not all(_single_node(c) for c in roots) or len({c.nranks for c in roots}) != 1 \
            or len({c.id for c in roots}) < len(roots):
        return None
    claim_hosts: set[str] = set()
    for ps in dup.values():
        hosts = [p.rpartition(":")[0] for p in _distinct_processes(ps)]
        if len(set(hosts)) != len(hosts):
            return None  # a rank claimed twice from one host: a rerun, not one job per host
        claim_hosts.update(hosts)
    if len(claim_hosts) != len(roots):
        return None
    n = roots[0].nranks
    return Finding(
        kind=FindingKind.CONFIG, severity=Severity.ERROR,
        message=f"each host ran a job of its own: {len(roots)} communicators of {n} ranks, each of one node, "
        f"on its own host ({', '.join(sorted(claim_hosts)[:4])}), in one launcher's output, instead of one job of "
        f"{n * len(roots)} ranks across the hosts",
        ranks=(), verdict=Verdict.CONFIG_ERROR, evidence=init_lines(roots),
        hint="The launcher started one single-node job per host: nccl-tests must be built with MPI=1 to run as one job "
        "under mpirun (else each process is a test of its own); torchrun needs --nnodes and the same rendezvous "
        "(--rdzv-endpoint / MASTER_ADDR) on every host; srun needs --ntasks-per-node with one task per GPU.",
        data={"communicators": [c.id for c in roots[:16]], "hosts": sorted(claim_hosts)[:64], "ranks_per_job": n})


MPI_HINT = ("nccl-tests must be built with MPI=1 (make clean first: an older build without MPI is not rebuilt) to run "
            "as one job under mpirun or srun; without it each process is a test of its own over its local GPUs.")


def _standalone_tests(run: Run) -> Finding | None:
    """nccl-tests built without MPI under mpirun / srun, read from its table alone: in ONE output, the device lines
    (``#  Rank N Pid P on HOST device D``) of two or more processes each number their ranks from 0 (the same count
    in every process: its local GPUs), all before the first row of the table, and no communicator reaches past
    one node. A build with MPI=1 numbers the ranks across all processes, so no two of them print a rank 0."""
    if len({f for f, _ in run.files}) != 1 or not run.nccl_tests:
        return None
    by_proc: dict[tuple[str, int], set[int]] = defaultdict(set)
    rank0_lines: list[Evidence] = []  # each process's device line of its rank 0
    last_device_line = 0
    for e in run.events:
        if e.kind == "RankTagged" and e.rank is not None and (proc := device_process(e.text)) is not None:
            by_proc[proc].add(e.rank)
            if e.rank == 0:
                rank0_lines.append(e.evidence)
            last_device_line = max(last_device_line, e.evidence.line)
    if len(by_proc) < 2 or len({len(v) for v in by_proc.values()}) != 1:
        return None
    n = len(next(iter(by_proc.values())))
    if any(v != set(range(n)) for v in by_proc.values()):
        return None
    if last_device_line > min(int(r["line"]) for r in run.nccl_tests):
        return None  # a second header after a table: runs one after the other, not one launch
    if not all(_single_node(c) for c in run.communicators if c.parent is None):
        return None
    hosts = sorted({h for h, _ in by_proc})
    where = f"on {len(hosts)} hosts ({', '.join(hosts[:4])})" if len(hosts) > 1 else f"on {hosts[0]}"
    return Finding(
        kind=FindingKind.CONFIG, severity=Severity.ERROR, ranks=(), verdict=Verdict.CONFIG_ERROR,
        message=f"each process ran an nccl-tests of its own: {len(by_proc)} processes {where} each print a header "
        f"whose device lines number ranks 0-{n - 1}, in one launcher's output, instead of one test of "
        f"{n * len(by_proc)} ranks: nccl-tests built without MPI=1",
        hint=MPI_HINT, evidence=tuple(rank0_lines[:MAX_EVIDENCE]),
        data={"hosts": hosts[:64], "processes": len(by_proc), "ranks_per_job": n})


def _finished_test_files(run: Run, dup: dict[int, list[str]]) -> Finding | None:
    """Several nccl-tests outputs, one file each, that are runs of their own: every file is the benchmark's output
    and has table rows, each process that claims a rank twice prints its device lines in one file only, and each file
    shows one set of processes; nothing failed (no NCCL warning or error, the benchmark's ``Out of bounds values : 0
    OK`` end seen). The same benchmark run again (other GPUs, another setting) and saved apart, to compare: finished
    runs, not a mix of one job's ranks. No verdict of its own; the rest judge the runs' tables."""
    files = {f for f, fmt in run.files if fmt is Format.NCCL_TESTS}  # (a topology or notes file beside them is no run)
    if len(files) < 2 or run.job.exit_code != 0:
        return None
    if {str(r["file"]) for r in run.nccl_tests} != files:
        return None
    if any(e.kind in (EventKind.NCCL_WARN, EventKind.DIST_ERROR) for e in run.events):
        return None
    file_of: dict[str, set[str]] = defaultdict(set)
    for proc in run.job.processes:
        if proc.evidence is not None:
            file_of[f"{proc.host}:{proc.pid}"].add(proc.evidence.file)
    procs = {name for ps in dup.values() for name in _distinct_processes(ps)}
    if any(len(file_of.get(name, ())) != 1 or not file_of[name] <= files for name in procs):
        return None
    by_file: dict[str, set[str]] = defaultdict(set)
    for name in procs:
        by_file[next(iter(file_of[name]))].add(name)
    if len(by_file) < 2:
        return None
    return Finding(
        kind=FindingKind.INPUT, severity=Severity.INFO,
        message=f"{len(files)} nccl-tests outputs, each a run of its own by its own process{'es' if len(procs) > 2 else ''} "
        f"({', '.join(sorted(procs)[:4])}), each finished with no failure: runs to compare, not one job",
        hint="each file is one run of the benchmark; compare their busbw tables run by run",
        evidence=first_lines(run, sorted(procs)), data={"runs": len(by_file), "processes": sorted(procs)[:64]})


def detect(run: Run) -> list[Finding]:
    findings: list[Finding] = [Finding(
        kind=FindingKind.INPUT, severity=Severity.INFO, message=f"{e.text}: earlier runs of it are left out",
        hint="each run is judged on its own: the last one's verdict is given; analyse an earlier run by cutting the "
             "console at its end", evidence=(e.evidence,))
        for e in run.events if e.kind == EventKind.EARLIER_RUNS]
    world = run.job.world_size
    seen = ranks_with_input(run)

    # ranks of the world that no input speaks for ----------------------------------------------------
    # (processes whose rank their lines never said may be the missing ranks: an input with as many is no gap)
    unranked = sum(1 for p in run.job.processes if p.rank is None and (p.host or p.pid))
    if world and seen:
        missing = sorted(set(range(world)) - seen)
        if missing and unranked < len(missing):
            findings.append(Finding(
                kind=FindingKind.INPUT, severity=Severity.WARNING,
                message=f"no input from rank{'s' if len(missing) > 1 else ''} {ranks_text(missing)} of a world of {world}: "
                f"{'they are' if len(missing) > 1 else 'it is'} not judged; findings rest on the "
                f"{len(seen & set(range(world)))} ranks that have logs or dumps",
                ranks=tuple(missing[:1024]),
                hint="collect the NCCL logs, stderr and Flight Recorder dumps of the missing ranks (every node) "
                     "and analyse them together",
                evidence=run.job.world_lines,
                data={"missing_ranks": missing[:4096], "world_size": world},
            ))

    # one rank claimed by two processes: two runs or two jobs in one folder ------------------------------
    procs_of: dict[int, list[str]] = defaultdict(list)
    for p in run.job.processes:
        if p.rank is not None:
            procs_of[p.rank].append(f"{p.host}:{p.pid}")
    dup = {r: ps for r, ps in sorted(procs_of.items()) if len(_distinct_processes(ps)) > 1}
    # job-wide ids only: "0x..." is NCCL's commId; "host:pid:ptr" stands in when NCCL printed none
    full_roots = sorted(c.id for c in run.communicators if c.parent is None and world and c.nranks == world
                        and c.id.startswith("0x"))
    separate = (_separate_jobs(run, dup) or _standalone_tests(run) or _finished_test_files(run, dup)) if dup else None
    if separate is not None:
        if "communicators" not in separate.data:  # standalone tests: the ranks of one host's test are all there
            findings = [f for f in findings if "missing_ranks" not in f.data]
        findings.append(separate)
    elif dup and not _rank_checked_in_twice(run):  # NCCL's own word: two processes of one job hold one rank
        first = next(iter(dup))
        jobs = f" (communicators {', '.join(full_roots[:4])})" if len(full_roots) > 1 else ""
        findings.append(Finding(
            kind=FindingKind.INPUT, severity=Severity.ERROR,
            message=f"the input mixes more than one job or run{jobs}: rank {first} is claimed by {len(dup[first])} "
            f"processes ({', '.join(dup[first][:4])})"
            + (f", and {len(dup) - 1} more ranks likewise" if len(dup) > 1 else "")
            + ": no verdict is given for a mix; analyse each job on its own",
            ranks=tuple(sorted(dup)[:1024]), evidence=first_lines(run, dup[first]),
            hint="analyse one job's files at a time: put each run in its own folder (NCCL_DEBUG_FILE=%h.%p "
                 "names files by host and pid; a restarted job reuses ranks but not pids)",
            verdict=Verdict.UNKNOWN,
            data={"claimed_by": {str(r): ps for r, ps in dup.items()}, "communicators": full_roots},
        ))

    # NCCL processes that hold no rank of this job's world ---------------------------------------------
    ranked = [p for p in run.job.processes if p.rank is not None]
    hosts_of_pid: dict[int, list[str]] = defaultdict(list)
    for p in ranked:
        hosts_of_pid[p.pid].append(p.host)
    stray = [f"{p.host}:{p.pid}" for p in run.job.processes if p.rank is None  # a glued host is no stray
             and not any(p.host != h and p.host.endswith(h) for h in hosts_of_pid.get(p.pid, ()))]
    other_sizes = sorted({c.nranks for c in run.communicators if c.parent is None and c.nranks != world})
    if ranked and stray and other_sizes and not dup:
        findings.append(Finding(
            kind=FindingKind.INPUT, severity=Severity.ERROR,
            message=f"the input mixes more than one job: {len(stray)} process{'es' if len(stray) > 1 else ''} "
            f"({', '.join(stray[:4])}) belong to communicators of {' or '.join(map(str, other_sizes[:4]))} ranks, "
            f"not to this job's world of {world or '?'}: no verdict is given for a mix; analyse each job on its own",
            hint="put each job's files in its own folder", evidence=first_lines(run, stray),
            verdict=Verdict.UNKNOWN,
            data={"processes": stray[:256], "other_world_sizes": other_sizes},
        ))
    elif ranked and stray:
        findings.append(Finding(
            kind=FindingKind.INPUT, severity=Severity.WARNING,
            message=f"{len(stray)} process{'es' if len(stray) > 1 else ''} ({', '.join(stray[:4])}) "
            f"{'have' if len(stray) > 1 else 'has'} NCCL lines but no rank in this job's world of {world or '?'}: "
            "logs of another job, or cut before NCCL's Init lines; not judged",
            hint="check that these files belong to the job being analysed", evidence=first_lines(run, stray),
            data={"processes": stray[:256], "other_world_sizes": other_sizes},
        ))
    return findings
