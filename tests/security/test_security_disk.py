"""A test run leaves no generated run behind: a passing test's ``tmp_path`` is removed when it ends
(``tmp_path_retention_policy = "failed"`` in pyproject.toml); a failing test's stays for a look. The
large runs (a 64-rank run of 1.2 M lines is 260 MB, the SIGTERM test's 256 ranks 180 MB) used to stay
in /tmp/pytest-of-USER, three sessions of them."""
from __future__ import annotations

from pathlib import Path

import pytest

_LEFT: list[Path] = []


def test_retention_policy_is_failed_only(request: pytest.FixtureRequest) -> None:
    assert request.config.getini("tmp_path_retention_policy") == "failed"


@pytest.mark.xdist_group("tmp-retention")
def test_a_run_folder_written_here(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "rank0.log").write_bytes(b"x" * (1 << 20))
    _LEFT.append(run)


@pytest.mark.xdist_group("tmp-retention")
def test_is_gone_once_the_test_passed() -> None:
    if not _LEFT:
        pytest.skip("runs only after test_a_run_folder_written_here, in the same process")
    assert not _LEFT[0].exists() and not _LEFT[0].parent.exists()
