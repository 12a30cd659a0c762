"""``Finding.data`` holds only the keys ``model.FindingData`` declares (mypy checks the literals; this checks what
the detectors build at run time, spreads and copies included), over the bundled samples and fault runs."""
from __future__ import annotations

import evidence_audit as audit
import pytest
from ncclscope.analysis import analyze_paths
from ncclscope.model import FindingData

RUNS = [pytest.param(paths, id=name) for name, paths in audit.input_sets()
        if name.startswith(("samples/", "fault_runs/"))]


def test_the_declared_keys_include_what_the_decision_reads():
    assert {"culprits", "certainty", "class", "waiting", "where", "sides", "mismatch", "t", "warn", "chain"} \
        <= set(FindingData.__annotations__)


@pytest.mark.parametrize("paths", RUNS)
def test_finding_data_keys_are_declared(paths):
    a = analyze_paths(paths, cache=False)
    undeclared = {(f.kind.value, k) for f in a.findings for k in f.data if k not in FindingData.__annotations__}
    assert not undeclared
