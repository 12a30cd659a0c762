"""The pipeline: paths -> parsed files -> run model -> findings -> decision."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .build import build_run
from .detectors import run_detectors
from .ingest import ingest
from .model import Finding, Run
from .verdict import Decision, decide


@dataclass
class Analysis:
    run: Run
    findings: list[Finding]
    decision: Decision


def analyze_run(run: Run) -> Analysis:
    findings = run_detectors(run)
    order = {"critical": 0, "error": 1, "warning": 2, "info": 3}
    findings.sort(key=lambda f: order[f.severity.value])
    return Analysis(run, findings, decide(run, findings))


def analyze_paths(paths: list[Path], progress: Callable[[int, int], None] | None = None) -> Analysis:
    return analyze_run(build_run(ingest(paths, progress=progress)))
