"""The hook's parts as ``ncclscope run`` installs them: every module of analyzer/hook is copied into the
run's site (a part left out would fail the hook's import inside every rank), and the chaos switch."""
from __future__ import annotations

from pathlib import Path

import pytest

from ncclscope.hook.chaos import CHAOS_POINTS, Chaos
from ncclscope.launch import HOOK_FILES, HOOK_PACKAGE, prepare_hook_site

HOOK_DIR = Path(__file__).resolve().parents[2] / "analyzer" / "hook"


def test_every_hook_module_is_installed(tmp_path: Path) -> None:
    modules = sorted(p.name for p in HOOK_DIR.glob("*.py") if p.name != "sitecustomize.py")
    assert sorted(HOOK_FILES) == modules
    site = prepare_hook_site(tmp_path)
    assert sorted(p.name for p in (site / HOOK_PACKAGE).glob("*.py")) == modules


@pytest.mark.parametrize(("text", "points"), [
    ("", set()), ("all", set(CHAOS_POINTS)), (" coll, done ,,write ", {"coll", "done", "write"}),
])
def test_chaos_points(text: str, points: set[str]) -> None:
    chaos = Chaos(text)
    assert bool(chaos) is bool(points) and all(p in chaos for p in points)
    for point in CHAOS_POINTS:
        if point in points:
            with pytest.raises(RuntimeError, match=f"chaos in {point}"):
                chaos.check(point)
        else:
            chaos.check(point)
