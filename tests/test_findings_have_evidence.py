"""Every finding carries real evidence: at least one line whose file is one of the input's files and whose line
is 1 or more, over every bundled run (samples/, tests/data/fault_runs/, tests/data/wild/) and the real corpus
when present. The exceptions, each a class, are written out in tests/evidence_audit.py: a Flight Recorder dump
has no lines (its evidence is line 0 of the dump), and an ``internal`` finding is a detector's failure, not a fact
of the input. ``python tests/evidence_audit.py`` lists the findings that break this."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import evidence_audit as audit
import pytest
from conftest import CORPUS, corpus_runs
from ncclscope.analysis import analyze_paths
from ncclscope.input_names import InputError
from ncclscope.model import Evidence, Finding, FindingKind, Format, Severity

BUNDLED = [pytest.param(paths, id=name) for name, paths in audit.input_sets()]


def _faults(paths: list[Path]) -> list[str]:
    try:
        a = analyze_paths(paths, cache=False)
    except InputError:  # an input the analysis refuses has no findings
        return []
    return audit.evidence_faults(a)


@pytest.mark.parametrize("paths", BUNDLED)
def test_every_finding_has_evidence(paths):
    assert _faults(paths) == []


@pytest.mark.parametrize("name", corpus_runs())
def test_every_corpus_finding_has_evidence(name):
    assert _faults([CORPUS / name]) == []


def test_the_bundled_runs_are_all_there():
    names = [name for name, _ in audit.input_sets()]
    assert sum(n.startswith("samples/") for n in names) >= 6
    assert sum(n.startswith("fault_runs/") for n in names) >= 13
    assert sum(n.startswith("wild/") for n in names) >= 150


def _finding(*evidence: Evidence, kind: FindingKind = FindingKind.HANG) -> Finding:
    return Finding(kind=kind, severity=Severity.ERROR, message="m", evidence=evidence)


def test_the_check_finds_each_kind_of_missing_evidence():
    run = SimpleNamespace(files=[("a.log", Format.LOG), ("fr_rank0.pkl", Format.FLIGHT_RECORDER)])
    findings = [
        _finding(),  # none at all
        _finding(Evidence("a.log", 0, "x")),  # line 0 of a log
        _finding(Evidence("", 0, "x")),  # a made-up location
        _finding(Evidence("b.log", 3, "x")),  # a file the input does not hold
        _finding(Evidence("a.log", 3, "x")),  # real
        _finding(Evidence("fr_rank0.pkl", 0, "x")),  # a dump as a whole: the documented exception
        _finding(kind=FindingKind.INTERNAL),  # a detector's failure: the other exception
    ]
    faults = audit.evidence_faults(SimpleNamespace(run=run, findings=findings))
    assert sum("no evidence from the input" in f for f in faults) == 1
    assert sum("no real evidence line" in f for f in faults) == 3
    assert sum("names no input file" in f for f in faults) == 2
    assert sum("at line 0 of a.log" in f for f in faults) == 1
    assert len(faults) == 7
