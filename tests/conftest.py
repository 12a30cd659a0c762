"""Shared fixtures.

The real corpus lives beside the checkout in ../shared/corpus; a clone without it skips those tests
with the one reason NO_CORPUS. Every report built in-process during the suite is validated against
the JSON Schema shipped with the package (``ncclscope/schema/report.schema.json``).
"""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORPUS = Path(os.environ.get("NCCLSCOPE_CORPUS", ROOT.parent / "shared" / "corpus"))
SAMPLES = ROOT / "samples"
NO_CORPUS = "the real corpus (../shared/corpus beside the checkout) is absent; samples/ cover real runs"
SCHEMA_PATH = ROOT / "analyzer" / "schema" / "report.schema.json"


def report_errors(report: dict) -> list[str]:
    """Every way ``report`` breaks the report schema, as readable lines (empty when valid)."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text()))
    return [f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}" for e in validator.iter_errors(report)]


def _validating(to_json):
    def wrapper(a):
        out = to_json(a)
        errors = report_errors(json.loads(json.dumps(out, default=str)))
        assert not errors, f"report does not match its schema: {errors[:5]}"
        return out
    return wrapper


def pytest_configure(config):
    from ncclscope import report

    if not getattr(report.to_json, "_validating", False):
        report.to_json = _validating(report.to_json)
        report.to_json._validating = True


def corpus_names() -> list[str]:
    """The corpus runs' names; empty when the corpus is absent."""
    exp = CORPUS / "EXPECTED.json"
    return list(json.loads(exp.read_text())) if exp.exists() else []


def corpus_runs() -> list:
    """The corpus runs' names, for parametrize; one skipped case with NO_CORPUS when it is absent."""
    return corpus_names() or [pytest.param("-", marks=pytest.mark.skip(reason=NO_CORPUS))]


@pytest.fixture(scope="session")
def corpus() -> Path:
    if not CORPUS.exists():
        pytest.skip(NO_CORPUS)
    return CORPUS


@pytest.fixture(scope="session")
def expected(corpus: Path) -> dict:
    return json.loads((corpus / "EXPECTED.json").read_text())


@pytest.fixture(autouse=True)
def no_thread_leak():
    """A test must not leave threads running behind it (watchers, tailers, servers)."""
    before = {t.ident for t in threading.enumerate()}
    yield
    import time

    deadline = time.time() + 60  # a safety net: the wait is on the event
    while True:
        extra = [t for t in threading.enumerate() if t.ident not in before and t.is_alive() and not t.daemon]
        if not extra or time.time() > deadline:
            break
        time.sleep(0.05)
    assert not extra, f"threads left running: {[t.name for t in extra]}"
