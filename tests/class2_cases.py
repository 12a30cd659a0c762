"""The second round's fault-class cases (tests/data/classes2/<case>/): logs written in the shapes public threads show,
one class of misreading each (failures read as a hang, slow runs read healthy, who is missing, two runs in one
console, a framework's echo over an init hang), checked like tests/data/classes/ (``class_cases``): the wild set's
fields plus the communicators' ``transports``, the decision's ``certainty`` and words its ``headline`` holds."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from wild_cases import DATA
from wild_cases import table as wild

CLASSES2 = DATA / "classes2"
CASES = {w["case"]: w for w in wild.load_expected(CLASSES2)}


def analysis(name: str) -> Any:
    from ncclscope.analysis import analyze_paths

    return analyze_paths(wild.case_inputs(name, CLASSES2), cache=False)


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
    return CLASSES2 / name
