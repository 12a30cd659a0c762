"""The live monitor's alerts file: one name and one reader (``ncclscope.alerts_file``) for every module that reads
it: the analysis, the exports, the dashboard."""
from __future__ import annotations

import ast
import json
import os
from pathlib import Path

from ncclscope.alerts_file import ALERTS_FILE, folder_alerts, newest_alert, read_alerts

ROOT = Path(__file__).resolve().parent.parent


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


def test_alerts_are_json_objects_with_a_kind_oldest_first(tmp_path):
    p = _write(tmp_path / ALERTS_FILE, [json.dumps({"kind": "straggler"}), "not json", json.dumps([1]),
                                        json.dumps({"no": "kind"}), json.dumps({"kind": "hang", "ts": 2.0})])
    assert read_alerts(p) == [{"kind": "straggler"}, {"kind": "hang", "ts": 2.0}]
    assert newest_alert(p) == {"kind": "hang", "ts": 2.0}


def test_a_line_still_being_written_is_skipped(tmp_path):
    p = tmp_path / ALERTS_FILE
    p.write_text('{"kind": "straggler"}\n{"kind": "hang"}\n{"kind": "ha')
    assert newest_alert(p) == {"kind": "hang"}


def test_only_the_last_bytes_are_read_and_a_cut_line_is_dropped(tmp_path):
    lines = [json.dumps({"kind": "k", "n": i}) for i in range(100)]
    p = _write(tmp_path / ALERTS_FILE, lines)
    last5 = 5 * (len(lines[-1]) + 1)  # the last five lines, as long as each other
    assert [a["n"] for a in read_alerts(p, limit=last5)] == [95, 96, 97, 98, 99]  # starts right after a newline
    assert [a["n"] for a in read_alerts(p, limit=last5 - 3)] == [96, 97, 98, 99]  # the line cut there is not read


def test_no_file_a_fifo_or_a_link_gives_no_alerts(tmp_path):
    assert read_alerts(tmp_path / ALERTS_FILE) == [] and newest_alert(tmp_path / ALERTS_FILE) is None
    target = _write(tmp_path / "elsewhere.jsonl", [json.dumps({"kind": "hang"})])
    (tmp_path / "linked").mkdir()
    (tmp_path / "linked" / ALERTS_FILE).symlink_to(target)
    assert read_alerts(tmp_path / "linked" / ALERTS_FILE) == []
    (tmp_path / "fifo").mkdir()
    os.mkfifo(tmp_path / "fifo" / ALERTS_FILE)
    assert read_alerts(tmp_path / "fifo" / ALERTS_FILE) == []  # returns at once: a FIFO is never opened to read


def test_folder_alerts_reads_each_folder_and_skips_files(tmp_path):
    for name, kind in (("a", "hang"), ("b", "cleared")):
        (tmp_path / name).mkdir()
        _write(tmp_path / name / ALERTS_FILE, [json.dumps({"kind": kind})])
    log = _write(tmp_path / "x.log", ["text"])
    assert [a["kind"] for a in folder_alerts([tmp_path / "a", log, tmp_path / "b"])] == ["hang", "cleared"]


def test_the_file_is_named_in_one_place():
    """No module but ``alerts_file`` spells the name as a value (prose in docstrings and messages may)."""
    spelled = []
    for path in [*(ROOT / "analyzer").rglob("*.py"), *(ROOT / "dashboard").rglob("*.py")]:
        if path.name == "alerts_file.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and node.value == ALERTS_FILE:
                spelled.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and isinstance(node.right, ast.Constant) \
                    and node.right.value == ALERTS_FILE:
                spelled.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert spelled == []
