"""The hook benchmark's tensor-parallel job runs end to end on the CPU (gloo, a tiny step) and gives the
in-process figures the GPU rerun is read by: the per-call A/B, the step as user code meets the hook
against the bare function, and the share of calls the hook traced, counted at the lookup. On gloo the
call budget is off, so every call is traced; with the budget let on for gloo, most are not."""
from __future__ import annotations

import math

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARGS = ["tp", "--backend", "gloo", "--repeats", "1", "--variants", "bare,traced", "--layers", "4",
        "--hidden", "64", "--tokens", "16", "--steps", "8", "--warmup", "2"]


def _run(extra_env: dict[str, str]) -> str:
    import os

    env = {**os.environ, **extra_env}
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "hook_overhead.py"), *ARGS], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def _figure(out: str, title: str, variant: str) -> float:
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("--") and title in line)
    row = next(line for line in lines[at + 1:] if line.split()[0] == variant)
    return float(row.split()[1])


@pytest.mark.slow
def test_tp_job_reports_the_in_process_figures() -> None:
    out = _run({})
    assert _figure(out, "share of those steps' collectives the hook traced", "traced") == 100.0  # gloo: no budget
    assert abs(_figure(out, "a step as user code meets the hook", "bare")) < 50  # a ratio, not garbage
    _figure(out, "per-call path alone", "traced")
    with_budget = _run({"NCCLSCOPE_HOOK_BUDGET_GLOO": "1"})
    # the budget leaves some collectives untraced; what share it traces follows the machine's speed (60 % was
    # passed on a loaded machine): a figure of the benchmark, not a bound of this test
    assert _figure(with_budget, "share of those steps' collectives the hook traced", "traced") < 100


@pytest.mark.slow
def test_tp_budget_only_pinned_reports_the_hook_less_its_floor() -> None:
    """The GPU rerun's form: only the user-code measure, processes pinned, two processes a variant,
    and the hook's figure less the bare processes' (the floor) with its interval, for the blocks'
    median and fastest steps."""
    import os

    args = list(ARGS)
    args[args.index("--repeats") + 1] = "2"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "hook_overhead.py"), *args, "--budget-only",
                           "--pairs", "3", "--cpus", "auto"], cwd=ROOT, capture_output=True, text=True, timeout=600,
                          check=False, env={**os.environ, "NCCLSCOPE_HOOK_BUDGET_GLOO": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "processes pinned to CPUs" in out
    assert "per-call path alone" not in out  # --budget-only: no every-call A/B
    assert math.isfinite(_figure(out, "the blocks' fastest steps, median over the pairs", "bare"))
    floor = [line for line in out.splitlines() if line.startswith("-- traced less the floor")]
    assert len(floor) == 2 and all("95 % interval" in line for line in floor), out[-2000:]
    # the budget traces a share of the steps' collectives (100 % without one: the test above); how large a share
    # depends on how fast the machine runs the steps, a figure of the benchmark, not a bound of this test
    assert 0 < _figure(out, "share of those steps' collectives the hook traced", "traced") <= 100
