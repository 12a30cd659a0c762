"""The hook's per-collective lines, written through %-formats made once per call site, parse to the
same records as the dict builders, and the reader (sources/hook_jsonl.py) sees the same fields."""
from __future__ import annotations

import json

import pytest

from ncclscope.hook import records as R
from ncclscope.sources.hook_jsonl import parse_jsonl

ODD_WHERE = ['train.py:12 in main', 'we%ird "name".py:3 in <module>', "tab\there\\back:1 in f", "ünï:2 in g", None]


@pytest.mark.parametrize("where", ODD_WHERE)
@pytest.mark.parametrize("p2p", [False, True])
def test_coll_format_parses_to_the_coll_record(where: str | None, p2p: bool) -> None:
    t, seq = 1764600000.123456, 4711
    line = R.coll_format(3, "pg%1", "allreduce", "bfloat16", where, p2p, sized=True) % (t, seq, 4096, 8192)
    assert line.endswith("\n") and line.count("\n") == 1
    want = R.coll(3, "pg%1", seq, "allreduce", 4096, "bfloat16", 8192, where, round(t, 6), p2p)
    assert json.loads(line) == want


def test_unsized_coll_and_done_formats() -> None:
    line = R.coll_format(0, "0", "barrier", None, "a.py:1 in f", False, sized=False) % (5.5, 9)
    assert json.loads(line) == R.coll(0, "0", 9, "barrier", None, None, None, "a.py:1 in f", 5.5)
    for how in ("sync", "work", "fr", "order"):
        got = json.loads(R.done_format(2, "0:p2p", how) % (7.25, 10, 1.23456))
        assert got == R.done(2, "0:p2p", 10, 1.23456, how, t=7.25)


def test_reader_sees_the_same_fields_as_from_dict_records() -> None:
    fast = [R.coll_format(1, "0", "allgather", "float32", "m.py:5 in step", False, True) % (10.0, 1, 8, 32),
            R.done_format(1, "0", "fr") % (10.5, 1, 500.0)]
    slow = [json.dumps(R.coll(1, "0", 1, "allgather", 8, "float32", 32, "m.py:5 in step", 10.0)),
            json.dumps(R.done(1, "0", 1, 500.0, "fr", t=10.5))]
    a = [(r.type, r.rank, r.data) for r in parse_jsonl(enumerate(fast, 1), "ncclscope-rank1.jsonl")]
    b = [(r.type, r.rank, r.data) for r in parse_jsonl(enumerate(slow, 1), "ncclscope-rank1.jsonl")]
    assert a == b and len(a) == 2


@pytest.mark.parametrize(("field", "value", "want"), [
    ("seq", 5, 5), ("seq", 5.0, 5), ("seq", True, None), ("seq", float("nan"), None), ("seq", 2 ** 70, None),
    ("seq", "5", None), ("seq", [5], None), ("t", 3, 3.0), ("t", 1.5, 1.5), ("t", float("inf"), None),
    ("dur_ms", -2.5, -2.5), ("where", "a.py:1", "a.py:1"), ("where", "x" * 3000, "x" * 2000), ("pg", 0, "0"),
    ("pg", False, None), ("where", {"a": 1}, None), ("other", [1], [1]), ("seq", None, "none"),
])
def test_clean_hook_fields_keeps_each_field_only_in_its_type(field: str, value: object, want: object) -> None:
    from ncclscope.sources.hook_jsonl import clean_hook_fields

    got = clean_hook_fields({"type": "coll", field: value})
    if want == "none":
        assert got[field] is None
    elif want is None:
        assert field not in got
    else:
        assert got[field] == want and type(got[field]) is type(want)
