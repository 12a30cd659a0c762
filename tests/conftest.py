"""Shared fixtures. The real corpus lives beside the checkout in ../shared/corpus."""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORPUS = Path(os.environ.get("NCCLSCOPE_CORPUS", ROOT.parent / "shared" / "corpus"))
SAMPLES = ROOT / "samples"


def corpus_runs() -> list[str]:
    exp = CORPUS / "EXPECTED.json"
    if not exp.exists():
        return []
    return list(json.loads(exp.read_text()))


@pytest.fixture(scope="session")
def corpus() -> Path:
    if not CORPUS.exists():
        pytest.skip(f"real corpus not found at {CORPUS}")
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

    deadline = time.time() + 5
    while True:
        extra = [t for t in threading.enumerate() if t.ident not in before and t.is_alive() and not t.daemon]
        if not extra or time.time() > deadline:
            break
        time.sleep(0.05)
    assert not extra, f"threads left running: {[t.name for t in extra]}"
