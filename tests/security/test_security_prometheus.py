"""Log text in Prometheus label values (the ``.prom`` file of ``export`` and the dashboard's /metrics):
ESC, BEL, CR, NUL, C1 and bidi controls are written as printable ``\\xNN`` text, never as the raw
byte (a terminal that shows the file, a scraper that logs a line, must see no control sequence),
and the text still parses with the labels it says."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from ncclscope.analysis import analyze_paths
from ncclscope.cli import main
from ncclscope.export.prometheus import prometheus_text

ROOT = Path(__file__).resolve().parents[2]
GPU_HANG = ROOT / "samples" / "gpu_hang"
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")  # all controls but the line break
PLANTED = 'x\x1b]0;pwned\x07\x1b[2J\rover\x00\x9b1m\u202edone"\\'


@pytest.fixture(scope="module")
def gpu_hang():
    return analyze_paths([GPU_HANG], cache=False)


def test_control_bytes_in_a_label_are_printable_text(gpu_hang) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    text = prometheus_text(gpu_hang, alerts=[{"kind": PLANTED}], now=2e9)
    assert not RAW.search(text)
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    (label,) = [s.labels["kind"] for s in fams["ncclscope_alerts"].samples]
    assert label == 'x\\x1b]0;pwned\\x07\\x1b[2J\\x0dover\\x00\\x9b1m\\u202edone"\\'
    assert not RAW.search(label)


def test_the_prom_file_of_a_run_with_a_planted_alert_has_no_raw_control(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    run = tmp_path / "run"
    shutil.copytree(GPU_HANG, run)
    (run / "alerts.jsonl").write_text(json.dumps({"kind": PLANTED, "verdict": "hang"}) + "\n")
    out = tmp_path / "run.prom"
    assert main(["export", str(run), "--prometheus", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "ncclscope_alerts_total{kind=" in text and not RAW.search(text)
