"""One judgement, two ways: `ncclscope analyze --json` and `ncclscope watch --once --json` on a folder,
and the check that they agree. Shared by the parity, rules, fault-injection and live-lines tests.

The live monitor judges hang, desync and crash only: where `analyze` says healthy, degraded or
unknown, `watch` must raise no incident; a config mistake is judged offline only, and the crash it
caused may be alerted live.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from ncclscope.cli import cli

LIVE = {"hang", "desync", "crash"}


def judgements(folder: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(analyze's JSON, watch --once's verdict) for one folder, through the CLI."""
    runner = CliRunner()
    a = runner.invoke(cli, ["analyze", "--json", "--no-cache", "--no-progress", str(folder)])
    assert a.exit_code == 0, a.output
    w = runner.invoke(cli, ["watch", "--once", "--json", str(folder)])
    assert w.exit_code == 0, w.output
    state = json.loads(w.stdout)["state"]
    return json.loads(a.stdout), state["verdict"] | {"states": {r["rank"]: r["state"] for r in state["ranks"]}}


def assert_same_judgement(analyzed: dict[str, Any], live: dict[str, Any]) -> None:
    v = analyzed["verdict"]
    states = live.get("states") or {}
    if states and v != "config_error":  # the hook's records name the ranks: each in the same state
        assert states == {r["rank"]: r["state"] for r in analyzed["ranks"] if r["rank"] in states}, \
            (states, analyzed["ranks"])
    if v == "config_error":
        assert live["verdict"] in ("healthy", "crash"), live
        return
    if v not in LIVE:
        assert live["verdict"] == "healthy", (v, live)
        return
    assert live["verdict"] == v, (analyzed["headline"], live)
    assert live["culprit_ranks"] == sorted(analyzed["culprit_ranks"]), (analyzed["headline"], live)
    if v in ("hang", "desync"):
        a_st, l_st = analyzed["stuck"] or {}, live["stuck"] or {}
        assert (a_st.get("pg"), a_st.get("seq")) == (l_st.get("pg"), l_st.get("seq")), (a_st, l_st)
        if a_st.get("op") and l_st.get("op"):
            assert a_st["op"] == l_st["op"]
