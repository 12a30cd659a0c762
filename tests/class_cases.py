"""The fault-class cases (tests/data/classes/<case>/): logs written in the shapes public threads show, one class of
misreading each (lines thrown away, a verdict withheld, the wrong direction, culprits a backend named), checked
against tests/data/classes/EXPECTED.jsonl by the wild set's own code (``wild_cases.table.evaluate``). Beyond the wild
set's fields a line may name the communicator's ``transports``, the decision's ``certainty`` level and words its
``headline`` holds; ``check`` holds a case to all of them."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from wild_cases import DATA
from wild_cases import table as wild


class CaseSet:
    """One folder of fault-class cases and its EXPECTED.jsonl, read and checked the same way for every round."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.cases = {w["case"]: w for w in wild.load_expected(root)}

    def analysis(self, name: str) -> Any:
        from ncclscope.analysis import analyze_paths

        return analyze_paths(wild.case_inputs(name, self.root), cache=False)

    def check(self, name: str) -> Any:
        """The case read as its expectation line says (verdict, culprits, facts, knowledge-base words, and the
        extras); the analysis, for further checks."""
        want = self.cases[name]
        got = wild.evaluate(want)
        assert got.problems() == [], f"{name}: " + "; ".join(got.problems())
        a = self.analysis(name)
        if "transports" in want:
            have = sorted({t for c in a.run.communicators for t in c.transports})
            assert have == sorted(want["transports"]), (name, have)
        if "certainty" in want:
            assert a.decision.certainty == want["certainty"], (name, a.decision.certainty, a.decision.headline)
        for words in want.get("headline", []):
            assert words in a.decision.headline, (name, words, a.decision.headline)
        return a

    def folder(self, name: str) -> Path:
        return self.root / name

    def names(self, *prefixes: str) -> list[str]:
        """The set's case names, sorted; those starting with one of ``prefixes`` where any are given (a round's
        cases that one test module checks, ``c9a_``)."""
        return sorted(n for n in self.cases if not prefixes or n.startswith(prefixes))


CLASSES = DATA / "classes"
_SET = CaseSet(CLASSES)
CASES, analysis, check, folder = _SET.cases, _SET.analysis, _SET.check, _SET.folder
