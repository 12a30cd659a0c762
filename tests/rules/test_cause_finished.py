"""A job whose every rank printed torch's exit-time warning and nothing failed ran to its end: healthy, not
"not enough information"; the same warnings after a rank's traceback are no such proof."""
from __future__ import annotations

from pathlib import Path

from ncclscope.analysis import analyze_paths


def exit_warning(rank: int) -> str:
    return (f"[rank{rank}]:[W611 16:40:12.118000331 ProcessGroupNCCL.cpp:1117] WARNING: process group has NOT been "
            "destroyed before it is being destructed. On normal program exit, the application should call "
            "destroy_process_group to ensure that any pending NCCL data transfers have finished in this process.")


def analyse(tmp_path: Path, lines: list[str]):
    (tmp_path / "fit.log").write_text("\n".join(lines) + "\n")
    return analyze_paths([tmp_path / "fit.log"], cache=False)


def test_every_rank_s_exit_warning_and_nothing_failed_is_healthy(tmp_path):
    a = analyse(tmp_path, ["Epoch 9: 100%|##########| 250/250 [01:02<00:00, 4.01it/s, loss=0.31]"]
                + [exit_warning(r) for r in (0, 3, 1, 2)])
    assert a.decision.verdict.value == "healthy", a.decision.headline


def test_exit_warnings_after_a_traceback_are_not_a_finished_job(tmp_path):
    a = analyse(tmp_path, ["[rank2]: Traceback (most recent call last):",
                           '[rank2]:   File "train.py", line 88, in <module>',
                           "[rank2]: ValueError: bad batch"] + [exit_warning(r) for r in (0, 1, 2, 3)])
    assert a.decision.verdict.value != "healthy", a.decision.headline
