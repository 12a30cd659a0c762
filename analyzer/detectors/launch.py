"""Launch: the command failed to start, so there is no training to judge; or the launcher numbered the ranks wrong.

Two shapes: the command itself could not be executed (exit 127 / 126 as a shell reports it, nothing
written by any rank), or every process died on its first lines (an ``ImportError`` such as
``ModuleNotFoundError: No module named 'torch'`` from a python that lacks torch, a ``SyntaxError``)
before any NCCL line, hook record, Flight Recorder dump or collective. Said as such, with the fix,
instead of "not enough information" or a crash of an unknown rank. The verdict is ``crash``: the job
did not do what was asked and exited non-zero, which is what scripts checking the verdict expect.

A launcher that refused its own command line (its argument parser's error, DeepSpeed's runner that found no address for
a node of its hostfile) before anything started is a config error: the command, not a rank.

A third shape is the launch configured wrong: global ranks claimed by two processes each while other ranks of
the world are claimed by none (``rules.launch.doubled_ranks``; Lightning's ``initializing ddp: GLOBAL_RANK: r``
lines, every node's processes numbered 0..k-1): a config error, no rank at fault.
"""
from __future__ import annotations

from ..model import EventKind, Evidence, Finding, FindingKind, Run, Severity, Verdict
from ..rules.facts import store_barriers
from ..rules.launch import doubled_ranks, too_few_tasks

START_ERRORS = ("ModuleNotFoundError", "ImportError", "SyntaxError", "IndentationError", "TabError")
LAUNCHER_ECHOES = ("ChildFailedError",)  # torchrun's own report of a rank's failure
NOT_RUN = {127: "the command was not found (exit 127)", 126: "the command could not be executed (exit 126)"}


def is_start_error(exc_type: object) -> bool:
    """An exception a process raises on its first lines (its imports, its syntax): it never started."""
    return isinstance(exc_type, str) and exc_type in START_ERRORS


def _started(run: Run) -> bool:
    """Anything that shows the job got as far as torch.distributed."""
    return bool(len(run.collectives) or run.communicators or run.pg_status or run.stacks
                or any(p.rank is not None for p in run.job.processes)
                or any(e.kind.startswith(("nccl", "watchdog")) for e in run.events))


def detect(run: Run) -> list[Finding]:
    return (_rank_layout(run) + _few_tasks(run) + _too_many_workers(run)
            + (_misuse(run) or _silent_launch(run) or _not_started(run)))


def _too_many_workers(run: Run) -> list[Finding]:
    """init_process_group's store-based barrier counted more workers than the world (``rules.hang.barrier_stall``: C >
    W, it waits for the count to equal the world and never will): more processes share the store than the job's
    world size says. The launch is set up wrong (a world size that does not match the processes started, two jobs on
    one MASTER_ADDR:MASTER_PORT): a config error, no rank at fault."""
    for key, evs, st in store_barriers(run):
        if max(e.data["worker_count"] for e in evs) <= max(e.data["world_size"] for e in evs):
            continue  # workers missing, not too many: the hang detector's
        return [Finding(
            kind=FindingKind.CONFIG, severity=Severity.CRITICAL, verdict=Verdict.CONFIG_ERROR, ranks=(),
            message=f"init_process_group's store-based barrier ({key}) never completed: {st.why}; a launch "
                    "configuration error, no rank at fault",
            hint="Make the world size the number of processes the launch starts (WORLD_SIZE / --nproc_per_node x "
                 "--nnodes, a framework's model-parallel sizes against the GPUs it is given), give each job its own "
                 "MASTER_PORT, and let a restarted job start a new store.",
            evidence=tuple(e.evidence for e in evs[:3]),
            data={"class": "too_many_workers", "culprits": [], "certainty": {"level": st.level, "why": st.why}})]
    return []


SSH_HINT = ("Set up passwordless ssh from the node that launches to every host of the hostfile (ssh-copy-id, the "
            "host keys accepted; `ssh -o PasswordAuthentication=no <host> hostname` must print the name), with the "
            "names or addresses the hostfile uses; on a single node, drop the hostfile.")


def _misuse(run: Run) -> list[Finding]:
    """A launcher that refused its own command line (``LaunchMisuse``: its argument parser's error, DeepSpeed's runner
    with no address for a node), in a job that never got as far as torch.distributed: a config error, the command."""
    said = [e for e in run.events if e.kind == EventKind.LAUNCH_MISUSE]
    if not said or _started(run):
        return []
    first = said[0]
    ssh = "ssh" in first.text
    return [Finding(
        kind=FindingKind.CONFIG, severity=Severity.CRITICAL, verdict=Verdict.CONFIG_ERROR, ranks=(),
        message=f"the launcher {'could not reach a host of the job' if ssh else 'refused its command line'} before "
                f"starting the training ({first.text.strip()[:240]}): a launch configuration error, no rank of the job ran",
        hint=SSH_HINT if ssh else
             "Fix the launch command: the launcher's arguments (the training script and its arguments after the "
             "launcher's own), and for DeepSpeed's multi-node runner a hostfile whose names resolve on the node that "
             "launches (or --master_addr given explicitly); run the printed command by hand to see it whole.",
        evidence=tuple(e.evidence for e in said[:3]),
        data={"class": "launch_misuse", "culprits": [],
              "certainty": {"level": "confirmed", "why": "the launcher's own refusal of its command line"}})]


SILENT_HINT = ("Run a plain program the same way first (mpirun with the same hosts and -np running `hostname`, then an "
               "MPI hello world): when that hangs too, the MPI runtime cannot reach the other nodes. Open the ports "
               "between the nodes (firewall, security software), pin the runtime to an interface every node reaches "
               "(--mca oob_tcp_if_include / btl_tcp_if_include <iface>, UCX_NET_DEVICES for pml ucx), and check "
               "passwordless ssh to every node.")


def _silent_launch(run: Run) -> list[Finding]:
    """An MPI launch whose program never printed (``LaunchSilent``: interrupted, or the text ends in the runtime's own
    debug lines) in an input with nothing of NCCL or torch.distributed: the runtime never started the program or
    never wired its processes up across the nodes. A config error of the launch environment, likely; no rank ran."""
    said = [e for e in run.events if e.kind == EventKind.LAUNCH_SILENT]
    if not said or len(run.collectives) or run.communicators or any(e.kind.startswith(("nccl", "watchdog"))
                                                                     for e in run.events):
        return []
    first = said[0]
    launcher = str(first.data.get("launcher") or "mpirun")
    how = ("was interrupted with no line of the program after it" if first.data.get("interrupted")
           else f"printed only its runtime's own debug lines ({first.data.get('chatter')}) until the text ends")
    return [Finding(
        kind=FindingKind.CONFIG, severity=Severity.CRITICAL, verdict=Verdict.CONFIG_ERROR, ranks=(),
        message=f"{launcher} never ran the program: the launch {how} (no NCCL line, no line of the program): the MPI "
                "runtime could not start or connect the processes across the nodes; a launch environment error, no "
                "rank ran",
        hint=SILENT_HINT, evidence=tuple(e.evidence for e in said[:3]),
        data={"class": "launch_silent", "culprits": [],
              "certainty": {"level": "likely", "why": "an MPI launch that printed nothing of its program before it was "
                                                       "stopped is the runtime's own wait, before NCCL"}})]


def _few_tasks(run: Run) -> list[Finding]:
    """A launcher command in the text started fewer processes than the world init_process_group's store-based barrier
    waits for (``rules.launch.too_few_tasks``): the launch is configured wrong, not a hang of the missing ranks."""
    waits = [e for e in run.events if e.kind == EventKind.STORE_BARRIER_WAIT and isinstance(e.data.get("world_size"), int)
             and isinstance(e.data.get("worker_count"), int)]
    launched = [e for e in run.events if e.kind == EventKind.LAUNCHED_TASKS and isinstance(e.data.get("count"), int)]
    if not waits or not launched:
        return []
    world = max(int(e.data["world_size"]) for e in waits)
    arrived = max(int(e.data["worker_count"]) for e in waits if e.data["world_size"] == world)
    few = too_few_tasks(((str(e.data.get("launcher")), int(e.data["count"])) for e in launched), world, arrived)
    if few is None:
        return []
    return [Finding(
        kind=FindingKind.CONFIG, severity=Severity.CRITICAL, verdict=Verdict.CONFIG_ERROR, ranks=(),
        message=f"the launch started {few.tasks} process{'es' if few.tasks > 1 else ''} ({few.launcher}) for a world of "
        f"{few.world}: init_process_group's store-based barrier waits for {few.world} workers and {few.arrived} came; the "
        f"{few.world - few.tasks} never started cannot arrive (a launch configuration error, not a hang of those ranks)",
        hint="Make the launcher start the world: srun -n / --ntasks (or --nodes x --ntasks-per-node), mpirun -np, "
             "torchrun --nnodes x --nproc_per_node equal to the WORLD_SIZE the script gives init_process_group (or "
             "let the script take WORLD_SIZE / RANK from the launcher's environment instead of a fixed number).",
        evidence=(launched[0].evidence, waits[0].evidence),
        data={"culprits": [], "tasks": few.tasks, "world": few.world, "arrived": few.arrived, "launcher": few.launcher})]


LAYOUT_HINT = ("Start one process per GPU with the node's rank known to each: under SLURM, `#SBATCH --nodes=N` and "
               "`--ntasks-per-node=<GPUs per node>` matching the trainer's num_nodes and devices (srun then sets each "
               "task's rank); with torchrun, a distinct --node_rank (or one rendezvous endpoint) on every node.")


def _rank_layout(run: Run) -> list[Finding]:
    """Ranks claimed twice while others are claimed by none: every node numbered its processes as the first ones."""
    claims = [e for e in run.events if e.kind == "RankClaim" and e.rank is not None]
    layout = doubled_ranks((e.rank for e in claims if e.rank is not None), run.job.world_size)
    if layout is None:
        return []
    doubled = ", ".join(str(r) for r, _ in layout.doubled)
    times = max(n for _, n in layout.doubled)
    none = ", ".join(map(str, layout.unclaimed)) + (" ..." if layout.unclaimed_count > len(layout.unclaimed) else "")
    return [Finding(kind=FindingKind.CONFIG, severity=Severity.CRITICAL, verdict=Verdict.CONFIG_ERROR, ranks=(),
                    message=f"the launch numbered the ranks wrong: rank{'s' if len(layout.doubled) > 1 else ''} "
                    f"{doubled} claimed by up to {times} processes each and {layout.unclaimed_count} of the world's "
                    f"{layout.world} ranks ({none}) by none: each node started its processes as the first ranks "
                    "(one task per node with no --ntasks-per-node, or the same node rank everywhere), so the "
                    "rendezvous cannot complete", hint=LAYOUT_HINT, evidence=tuple(e.evidence for e in claims[:4]),
                    data={"culprits": [], "doubled": [list(d) for d in layout.doubled],
                          "unclaimed": list(layout.unclaimed), "unclaimed_count": layout.unclaimed_count})]


def _not_started(run: Run) -> list[Finding]:
    if _started(run):
        return []
    errors = [e for e in run.events if e.kind == EventKind.DIST_ERROR
              and not str(e.data.get("type")).endswith(LAUNCHER_ECHOES)]
    early = [e for e in errors if is_start_error(e.data.get("type"))]
    if errors and len(early) == len(errors):
        first = early[0]
        what = f"{first.data.get('type')}: {first.data.get('message')}"
        ranks = sorted({e.rank for e in early if e.rank is not None})
        # torchrun's first failure: the rank the crash root cause names (the launcher stopped the others)
        culprits = tuple(sorted(set(ranks) | {x.rank for x in run.exits if x.root_cause and x.rank is not None}))
        who = f"{len(early)} tracebacks" if len(early) > 1 else "one traceback"
        if ranks:
            who += f" (rank{'s' if len(ranks) > 1 else ''} {', '.join(map(str, ranks))})"
        return [Finding(kind=FindingKind.LAUNCH, severity=Severity.CRITICAL, verdict=Verdict.CRASH, ranks=culprits,
                        message=f"the command failed to start: {what} ({who}, before any collective)",
                        hint=_hint(first.data), evidence=tuple(e.evidence for e in early[:4]),
                        data={"error": what, "processes": len(early)})]
    code = run.job.exit_code
    if not errors and code in NOT_RUN:
        return [Finding(kind=FindingKind.LAUNCH, severity=Severity.CRITICAL, verdict=Verdict.CRASH, ranks=(),
                        message=f"the command failed to start: {NOT_RUN[code]}",
                        hint="Check the command's spelling, that it is on PATH (or give its full path) and "
                             "that it is executable; `ncclscope run -- COMMAND ...` runs COMMAND as a shell would.",
                        evidence=(Evidence("exit.txt", 1, f"exit={code}"),), data={"exit_code": code})]
    return []


def _hint(data: dict[str, object]) -> str:
    kind, message = str(data.get("type")), str(data.get("message") or "")
    if kind in ("ModuleNotFoundError", "ImportError") and "'torch'" in message:
        return ("The python that ran the script has no torch: activate the environment that has it, or name its "
                "python in the command (`ncclscope run -- /path/to/env/bin/python -m torch.distributed.run ...`).")
    if kind in ("ModuleNotFoundError", "ImportError"):
        return "Install the missing module in the job's environment, or run the job with the python that has it."
    return "The script does not compile: fix the line the traceback names (the same on every rank)."
