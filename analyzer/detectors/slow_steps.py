"""Slow steps: the program's own step times slowed for a sustained stretch (``rules.step_time``), in a job where
nothing failed: degraded, possible, no rank singled out (every print of the stretch is slow, whichever rank printed it).

Inputs: the step times of each file's progress prints (``progress`` events' ``step_times``)."""
from __future__ import annotations

from ..model import EventKind, Evidence, Finding, FindingKind, Run, Severity, Verdict
from ..rules.facts import failures_of_run
from ..rules.step_time import slow_stretch

HINT = ("Compare what the slow steps share: the other jobs on the node (nvidia-smi, the GPU clocks and temperature: a "
        "throttling GPU slows every rank that waits on it), the data loader (I/O from a shared file system, a cache "
        "that was cold), the network of a multi-node job (a link that dropped to a slower rate, a congested switch); "
        "a per-step profile of a slow and a fast stretch (torch.profiler) shows which phase grew.")


def detect(run: Run) -> list[Finding]:
    if any(f.is_cause for f in failures_of_run(run)):
        return []  # a failure is the story; its slow steps before it are not
    out: list[Finding] = []
    for e in run.events:
        if e.kind != EventKind.PROGRESS or not e.data.get("step_times"):
            continue
        s = slow_stretch((int(x[0]), float(x[1]), str(x[2])) for x in e.data["step_times"])
        if s is None:
            continue
        f = e.evidence.file
        out.append(Finding(
            kind=FindingKind.SLOW_STEPS, severity=Severity.WARNING, verdict=Verdict.DEGRADED,
            message=f"the program's own step times: {s.steps} prints from line {s.first[0]} to {s.last[0]} of {f} took "
            f"{s.slow_s:.3g} s a step, {s.ratio:.1f}x the {s.usual_s:.3g} s most steps take; the job ran on, slowly",
            hint=HINT,
            evidence=(Evidence(f, s.first[0], s.first[1]), Evidence(f, s.last[0], s.last[1]),
                      Evidence(f, s.usual_at[0], s.usual_at[1])),
            data={"culprits": [], "certainty": {"level": "possible", "why": "the program's own step timings; what "
                                                "slowed them is not in the input"}}))
    return out
