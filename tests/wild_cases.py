"""The case tables of tests/data/wild/table.py (loaded once, as module `wild_table`) and their cases as pytest
parameters: a case that carries `known_gap` is a strict xfail, so the fix that reads it flips the test. Shared by
the wild and the held-out tests."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).resolve().parent / "data"
VERDICTS = {"healthy", "degraded", "hang", "desync", "crash", "config_error", "unknown"}


def _load_table() -> Any:
    if "wild_table" in sys.modules:
        return sys.modules["wild_table"]
    spec = importlib.util.spec_from_file_location("wild_table", DATA / "wild" / "table.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["wild_table"] = mod
    spec.loader.exec_module(mod)
    return mod


table = _load_table()


def case_params(cases: list[dict[str, Any]]) -> list[Any]:
    """One pytest parameter per expectation line, its id the case name."""
    out = []
    for want in cases:
        marks = [pytest.mark.xfail(strict=True, reason=want["known_gap"])] if want.get("known_gap") else []
        out.append(pytest.param(want, id=want["case"], marks=marks))
    return out
