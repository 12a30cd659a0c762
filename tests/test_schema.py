"""The report schema (``ncclscope/schema/report.schema.json``) holds for every report ncclscope makes.

conftest.py validates every report built in-process during the suite; this file covers what the
CLI prints (``analyze --json``), what ``run`` wrote into the bundled samples, and the schema itself.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import CORPUS, ROOT, SAMPLES, SCHEMA_PATH, corpus_runs, report_errors

from ncclscope.synth import generate_run

SAMPLE_DIRS = sorted(p.name for p in SAMPLES.iterdir() if p.is_dir())


def _analyze_json(path) -> dict:
    p = subprocess.run([sys.executable, "-m", "ncclscope", "analyze", str(path), "--json", "--no-cache"],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_schema_is_a_valid_draft_2020_12_schema():
    import jsonschema

    jsonschema.Draft202012Validator.check_schema(json.loads(SCHEMA_PATH.read_text()))


def test_schema_ships_with_the_package():
    from importlib.resources import files

    assert json.loads(files("ncclscope").joinpath("schema/report.schema.json").read_text()) \
        == json.loads(SCHEMA_PATH.read_text())


def test_schema_rejects_what_the_contract_forbids():
    good = _analyze_json(SAMPLES / "gpu_hang")
    assert report_errors(good) == []
    for broken in ({**good, "verdict": "stuck"}, {k: v for k, v in good.items() if k != "stuck"},
                   {**good, "culprit_ranks": ["1"]}, {**good, "stuck": {"pg": 0, "seq": 1, "op": None}}):
        assert report_errors(broken), broken


@pytest.mark.parametrize("sample", SAMPLE_DIRS)
def test_sample_reports_match_schema(sample):
    assert report_errors(_analyze_json(SAMPLES / sample)) == []
    written = SAMPLES / sample / "report.json"
    if written.exists():  # what `ncclscope run` wrote at the end of the recorded job
        assert report_errors(json.loads(written.read_text())) == []


@pytest.mark.parametrize("case", corpus_runs())
def test_corpus_reports_match_schema(case):
    assert report_errors(_analyze_json(CORPUS / case)) == []


@pytest.mark.parametrize("fault", [None, "hang", "desync", "crash", "straggler"])
def test_generated_reports_match_schema(tmp_path, fault):
    generate_run(tmp_path / "run", nranks=16, steps=4, fault=fault, fault_rank=3 if fault else None, seed=5)
    assert report_errors(_analyze_json(tmp_path / "run")) == []


def test_in_process_reports_are_validated_by_the_suite():
    from ncclscope import report

    assert getattr(report.to_json, "_validating", False)


def test_every_finding_kind_is_documented_and_unknown_words_are_refused():
    import re

    from ncclscope.model import Finding, FindingKind, Severity

    line = next(x for x in (ROOT / "README.md").read_text().split("\n- ") if x.startswith("`findings[].kind`"))
    documented = set(re.findall(r"`([a-z_]+)`", line.split("`severity`")[0]))
    assert {k.value for k in FindingKind} - {"internal"} <= documented, documented
    assert Finding(kind="hang", severity=Severity.INFO, message="m").kind is FindingKind.HANG
    with pytest.raises(ValueError):
        Finding(kind="stuck", severity=Severity.INFO, message="m")
