"""Detectors: one module per symptom, each with one entry point ``detect(run) -> list[Finding]``.

The registry below is the one place that lists them; ``run_detectors`` calls each in turn and
never lets one detector's bug hide the others' findings.
"""
from __future__ import annotations

from collections.abc import Callable

from ..model import Finding, FindingKind, Run, Severity
from . import (
    comm_summary,
    config,
    crash,
    custom_ar,
    desync,
    diag,
    fr_report,
    framework,
    hang,
    hotspots,
    inputs,
    launch,
    nccl_warn,
    p2p_first,
    pinned,
    ras,
    slow_compare,
    slow_init,
    slow_link,
    slow_scaling,
    slow_steps,
    slow_transport,
    stacks,
    straggler,
    transport,
)

Detector = Callable[[Run], list[Finding]]

DETECTORS: dict[str, Detector] = {
    "desync": desync.detect,
    "fr_report": fr_report.detect,  # the Flight Recorder analyser's own report pasted in a log
    "hang": hang.detect,
    "stacks": stacks.detect,  # the ranks' stack dumps and their own prints of who waits
    "framework": framework.detect,  # vLLM's, SGLang's, JAX's own stall reports and batch dumps
    "ras": ras.detect,  # NCCL's RAS report: ranks' launched-operation counts that differ, processes it considers dead
    "launch": launch.detect,  # before crash: a command that never started is said as such, not as a crash
    "crash": crash.detect,
    "config": config.detect,
    "pinned": pinned.detect,  # a setting the job pinned that its own lines show wrong (an empty GID index, SHM off)
    "straggler": straggler.detect,
    "transport": transport.detect,
    "slow_link": slow_link.detect,
    "slow_transport": slow_transport.detect,  # a slower transport than the hardware offers
    "slow_compare": slow_compare.detect,  # two measurements of one thing in one input, one far slower
    "slow_init": slow_init.detect,
    "slow_steps": slow_steps.detect,  # the program's own step times slowed for a sustained stretch
    "slow_scaling": slow_scaling.detect,  # two runs of one job, the one on more GPUs gaining little or nothing
    "comm_summary": comm_summary.detect,  # a program's own communication summary: collectives slower than any link
    "p2p_first": p2p_first.detect,  # a first collective that never completed on one host: GPU peer-to-peer
    "custom_ar": custom_ar.detect,  # a serving framework's custom all-reduce on in a job that stalled
    "hotspots": hotspots.detect,
    "inputs": inputs.detect,
    "nccl_warn": nccl_warn.detect,
    "diag": diag.detect,  # NCCL's own diagnostics (2.31+): settings, GPUs, drivers, ECC, NVLink, P2P across ranks
}


def run_detectors(run: Run, only: list[str] | None = None) -> list[Finding]:
    findings: list[Finding] = []
    for name, detect in DETECTORS.items():
        if only and name not in only:
            continue
        try:
            findings.extend(detect(run))
        except Exception as e:  # noqa: BLE001 - a detector bug must not hide the others' findings
            findings.append(Finding(kind=FindingKind.INTERNAL, severity=Severity.INFO, message=f"detector {name} failed: {type(e).__name__}: {e}"))
    return findings
