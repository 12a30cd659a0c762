"""The second round of fault-class cases (tests/data/classes3/<case>/): logs in the shapes public threads show, one
class of misreading each (crash vs config_error both ways, the MPI runtime's and UCX's own words, evidence outside
NCCL's lines: the kernel's log, stack dumps, the program's prints, one process driving two GPUs; hints that name the
setting), checked against tests/data/classes3/EXPECTED.jsonl like the first round (``class_cases.check``: the wild
set's fields, and the ``transports``, ``certainty`` and ``headline`` words a line may add)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from wild_cases import DATA
from wild_cases import table as wild

CLASSES3 = DATA / "classes3"
CASES = {w["case"]: w for w in wild.load_expected(CLASSES3)}


def analysis(name: str) -> Any:
    from ncclscope.analysis import analyze_paths

    return analyze_paths(wild.case_inputs(name, CLASSES3), cache=False)


def check(name: str) -> Any:
    """The case read as its expectation line says; the analysis, for further checks."""
    want = CASES[name]
    got = wild.evaluate(want)
    assert got.problems() == [], f"{name}: " + "; ".join(got.problems())
    a = analysis(name)
    if "transports" in want:
        have = sorted({t for c in a.run.communicators for t in c.transports})
        assert have == sorted(want["transports"]), (name, have)
    if "certainty" in want:
        assert a.decision.certainty == want["certainty"], (name, a.decision.certainty, a.decision.headline)
    for words in want.get("headline", []):
        assert words in a.decision.headline, (name, words, a.decision.headline)
    return a


def folder(name: str) -> Path:
    return CLASSES3 / name
