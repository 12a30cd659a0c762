"""The case tables of tests/data/wild/table.py (loaded once, as module `wild_table`) and their cases as pytest
parameters: a case that carries `known_gap` is a strict xfail, so the fix that reads it flips the test. Shared by
the wild and the held-out tests."""
from __future__ import annotations

import importlib.util
import json
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


FAULTS = {"healthy", "degraded", "hang", "desync", "crash", "cuda", "oom", "config_error", "network"}


def check_expectations(cases: list[dict[str, Any]], root: Path) -> None:
    """A held-out set's EXPECTED.jsonl against its folders: one line per folder, known fields and values,
    a SOURCE.md and inputs for each case, culprits as ranks."""
    names = [w["case"] for w in cases]
    assert len(names) == len(set(names)), "a case is listed twice"
    folders = {p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("__")}
    assert folders == set(names), f"folders without a line: {folders - set(names)}; lines without a folder: {set(names) - folders}"
    for w in cases:
        assert w["verdict"] in VERDICTS, w["case"]
        assert w["fault_class"] in FAULTS, w["case"]
        assert {"nccl_release", "launcher", "facts", "culprit_ranks", "fault_class", "known_gap"} <= set(w), w["case"]
        assert (root / w["case"] / "SOURCE.md").is_file(), w["case"]
        assert table.case_inputs(w["case"], root), w["case"]
        assert w["known_gap"] is None or (isinstance(w["known_gap"], str) and w["known_gap"].strip()), w["case"]
        assert all(isinstance(r, int) and r >= 0 for r in w["culprit_ranks"]), w["case"]


def thread_urls(root: Path) -> dict[str, str]:
    """Thread URL -> the case folder whose SOURCE.md cites it: every GitHub URL in it, and the URL of its ``Thread:``
    line wherever that thread is (a forum, a blog's post-mortem)."""
    out = {}
    for src in root.glob("*/SOURCE.md"):
        text = src.read_text()
        for word in text.split():
            if word.startswith("https://github.com/"):
                out[word.rstrip(").,>")] = src.parent.name
        for line in text.splitlines():
            url = line.split()[1] if line.startswith("Thread: https://") else ""
            if url and not url.startswith("https://github.com/"):  # (GitHub's are counted above)
                out[url.rstrip(").,>")] = src.parent.name
    return out


def check_case(want: dict[str, Any]) -> None:
    """One held-out case read as its thread concluded (a known gap runs as a strict xfail: ``case_params``)."""
    got = table.evaluate(want)
    assert got.problems() == [], f"{want['case']}: " + "; ".join(got.problems())


def check_one_thread_per_case(root: Path, cases: list[dict[str, Any]]) -> None:
    assert len(thread_urls(root)) == len(cases), "each case cites exactly one thread, and no two cases share one"


def check_threads_new(root: Path, other: str) -> None:
    """No thread of the set at ``root`` is cited by the set ``other`` written before it."""
    overlap = set(thread_urls(root)) & set(thread_urls(DATA / other))
    assert not overlap, overlap


def check_first_read(root: Path, cases: list[dict[str, Any]]) -> None:
    """The set's blind first read (FIRST_READ.json) covers every case."""
    first = json.loads((root / "FIRST_READ.json").read_text())
    assert sorted(x["case"] for x in first) == sorted(w["case"] for w in cases)
