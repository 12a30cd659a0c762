"""Logs in the shapes users paste into public threads (tests/data/wild/, one folder per thread, SOURCE.md
cites it): every fact the text shows, the verdict and the culprits the thread established, as
EXPECTED.jsonl states them. A case ncclscope reads wrong today carries `known_gap` there and runs as a
strict xfail, so that the parser fix that reads it flips the test."""
from __future__ import annotations

import pytest
from wild_cases import VERDICTS, case_params
from wild_cases import table as wild

CASES = wild.load_expected()


@pytest.mark.parametrize("want", case_params(CASES))
def test_wild_case(want):
    got = wild.evaluate(want)
    assert got.problems() == [], f"{want['case']}: " + "; ".join(got.problems())


def test_expectations_are_well_formed():
    names = [w["case"] for w in CASES]
    assert len(names) == len(set(names)), "a case is listed twice"
    folders = {p.name for p in wild.WILD.iterdir() if p.is_dir() and not p.name.startswith("__")}
    assert folders == set(names), f"folders without a line: {folders - set(names)}; lines without a folder: {set(names) - folders}"
    for w in CASES:
        assert w["verdict"] in VERDICTS, w["case"]
        assert {"nccl_release", "launcher", "facts", "culprit_ranks", "fault_class", "known_gap"} <= set(w), w["case"]
        assert (wild.WILD / w["case"] / "SOURCE.md").is_file(), w["case"]
        assert wild.case_inputs(w["case"]), w["case"]


def test_corpus_covers_releases_and_launchers():
    releases = {w["nccl_release"] for w in CASES if w["nccl_release"]}
    launchers = {w["launcher"] for w in CASES}
    assert len(CASES) >= 60 and len(releases) >= 15 and len(launchers) >= 8, (len(CASES), releases, launchers)
