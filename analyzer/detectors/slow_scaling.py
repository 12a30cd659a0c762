"""More GPUs, no faster: two runs of one job in the input, the one on more GPUs (or of larger steps) gaining little or
nothing over the other (``rules.scaling``), in a job where nothing failed: degraded, possible, no rank singled out.

Inputs: each file's runs and their pace (``run_paces`` events, ``sources.pace``); a run's GPU count where its pace
record has none, from a launcher command read in its lines (``launched_tasks`` events)."""
from __future__ import annotations

from typing import Any

from ..model import EventKind, Evidence, Finding, FindingKind, LogEvent, Run, Severity, Verdict
from ..rules.facts import failures_of_run
from ..rules.scaling import RunSpeed, ScalingLoss, scaling_loss

HINT = ("Data-parallel training all-reduces the gradients every step; where the GPUs have no fast path between them "
        "that eats what the added GPUs bring. On one host: `nvidia-smi topo -m` (NV# links, or PIX/PXB under one "
        "PCIe switch; GeForce cards have no peer-to-peer and go through the CPU) and `nvidia-smi nvlink -s`. Across "
        "nodes: the network NCCL took (NCCL_DEBUG=INFO: NET/IB or NET/Socket, and which interface) and its link rate. "
        "Measure that path alone (nccl-tests all_reduce_perf) against the hardware's rate; larger batches per GPU, "
        "gradient accumulation or larger DDP buckets (bucket_cap_mb) spread the communication over more work.")


def _speeds(run: Run) -> list[RunSpeed]:
    launched = [e for e in run.events if e.kind == EventKind.LAUNCHED_TASKS]
    out: list[RunSpeed] = []
    for e in run.events:
        if e.kind != EventKind.RUN_PACES:
            continue
        runs = list(e.data.get("runs") or [])
        for i, r in enumerate(runs):
            end = int(runs[i + 1]["line"]) if i + 1 < len(runs) else None
            out.append(_speed(e, r, _launched_in(launched, e.evidence.file, int(r["line"]), end)))
    return out


def _launched_in(launched: list[LogEvent], file: str, start: int, end: int | None) -> int | None:
    """The process count of the first launcher command read in a run's lines."""
    return next((int(e.data["count"]) for e in launched if e.evidence.file == file and e.evidence.line >= start
                 and (end is None or e.evidence.line < end) and int(e.data.get("count") or 0) > 0), None)


def _speed(e: LogEvent, r: dict[str, Any], launched: int | None) -> RunSpeed:
    steps, wps = r.get("steps") or {}, r.get("wps") or {}
    at = steps or wps
    gpus, how = (r.get("gpus"), r.get("how")) if r.get("gpus") else (launched, "the launcher command") if launched else (None, None)
    return RunSpeed((e.evidence.file, int(at["line"]), str(at["text"])), gpus, how, bool(r.get("multi") or launched),
                    int(steps["total"]) if steps else None, float(steps["seconds"]) if steps else None,
                    float(wps["median"]) if wps else None)


def _message(loss: ScalingLoss) -> str:
    a, b = loss.small, loss.large
    if loss.how == "slower":
        return (f"two runs of one loop in this input: the one of larger steps ({b.steps:,} steps against {a.steps:,}) "
                f"takes {b.seconds:.3g} s a step against {a.seconds:.3g} s, so the same work takes {loss.figure:.1f}x "
                "as long")
    assert a.gpus and b.gpus
    ideal = b.gpus / a.gpus
    got = loss.figure * ideal
    pace = (f"{b.seconds:.3g} s a step against {a.seconds:.3g} s" if a.seconds and b.seconds else
            f"{b.wps:,.0f} words/s against {a.wps:,.0f}")
    return (f"two runs of the job in this input: on {b.gpus} GPUs ({b.how}) it runs at {pace} on {a.gpus} ({a.how}), "
            f"{got:.2g}x the speed where {ideal:g}x is the ideal: a scaling efficiency of {loss.figure:.0%}; the added "
            "GPUs are lost to communication")


def detect(run: Run) -> list[Finding]:
    if any(f.is_cause for f in failures_of_run(run)):
        return []  # a failure is the story
    loss = scaling_loss(_speeds(run))
    if loss is None:
        return []
    ev = tuple(Evidence(*r.where) for r in (loss.large, loss.small))
    why = "two runs' own pace prints" + ("; the larger run's GPU count read off its step total" if loss.inferred else "")
    return [Finding(
        kind=FindingKind.SLOW_STEPS, severity=Severity.WARNING, verdict=Verdict.DEGRADED,
        message=_message(loss), hint=HINT, evidence=ev,
        data={"culprits": [], "class": "scaling", **({"efficiency": round(loss.figure, 3)} if loss.how == "efficiency"
                                                       else {"times_slower": round(loss.figure, 2)}),
              "certainty": {"level": "possible", "why": f"{why}; what slows the larger run is not in the input"}})]
