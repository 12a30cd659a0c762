"""The wrong direction, undone: an init that is slow but completes is a start, not a hang; a network plugin that
failed to start is a failure (crash, or a config error where the knowledge base says the set-up caused it), not a
hang; a log that ends right after init still reads as a possible hang where a collective was launched or the
application's own output fell silent (``rules.healthy.start_only``)."""
from __future__ import annotations

from pathlib import Path

import pytest
from class_cases import check
from ncclscope.analysis import analyze_paths
from ncclscope.model import Verdict


def test_slow_init_that_completes_is_no_hang():
    a = check("slow_init_55s_completes")
    assert not any(f.verdict is Verdict.HANG for f in a.findings)


@pytest.mark.parametrize("name, verdict", [("ofi_plugin_init_failed_one_line", Verdict.CRASH),
                                           ("ofi_fi_getinfo_failed_no_provider", Verdict.CONFIG_ERROR)])
def test_a_plugin_that_failed_to_start_is_a_failure_not_a_hang(name, verdict):
    a = check(name)
    assert a.decision.verdict is verdict


def _init_lines(extra: str = "", launch: bool = False) -> str:
    out = []
    for r in (0, 1):
        out.append(f"gpu-k:{3300 + r}:{3390 + r} [{r}] NCCL INFO comm 0x5a{r} rank {r} nranks 2 cudaDev {r} busId {r + 1}000 "
                   "- Init COMPLETE")
    if launch:
        out.append("gpu-k:3300:3300 [0] NCCL INFO Launch mode Parallel")
    return extra + "\n".join(out) + "\n"


def test_a_console_that_falls_silent_after_init_stays_a_possible_hang(tmp_path: Path):
    p = tmp_path / "console.log"
    p.write_text(_init_lines("[2026-01-05 10:00:01,001] [INFO] [launch.py:146:main] WORLD INFO DICT: {'gpu-k': [0, 1]}\n"))
    d = analyze_paths([p], cache=False).decision
    assert (d.verdict, d.certainty) == (Verdict.HANG, "possible"), d.headline


def test_a_first_collective_launched_then_silence_stays_a_possible_hang(tmp_path: Path):
    p = tmp_path / "nccl.log"
    p.write_text(_init_lines(launch=True))
    d = analyze_paths([p], cache=False).decision
    assert (d.verdict, d.certainty) == (Verdict.HANG, "possible"), d.headline


def test_nccl_lines_alone_ending_at_a_completed_init_are_a_start(tmp_path: Path):
    p = tmp_path / "nccl.log"
    p.write_text(_init_lines())
    d = analyze_paths([p], cache=False).decision
    assert (d.verdict, d.certainty) == (Verdict.HEALTHY, "possible"), d.headline
    assert d.headline.startswith("2 of 2 ranks finished init; nothing after it")
