"""One judgement, rendered everywhere; and the live monitor, which decides as the run goes, against it.

`ncclscope watch --once --json` renders `analyze`'s judgement of the folder: the same verdict, culprits,
stuck collective and rank states, checked exactly. The live monitor replayed over the same folder (what it
would have alerted while the run went) decides with the same rules (`ncclscope.rules`) and must agree:
it judges hang, desync and crash only: where `analyze` says healthy, degraded or unknown, it must raise no
incident; a config mistake that only a settings listing shows is judged offline only (the crash it caused may be alerted live).
Shared by the parity, rules, fault-injection and live-lines tests.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from ncclscope.cli import cli
from ncclscope.live.monitor import LiveConfig, LiveMonitor

LIVE = {"hang", "desync", "crash", "config_error"}


def judgements(folder: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(analyze's JSON, the live monitor's verdict and rank states after replaying the folder); on the way,
    `watch --once --json` is held to analyze's judgement exactly."""
    runner = CliRunner()
    a = runner.invoke(cli, ["analyze", "--json", "--no-cache", "--no-progress", str(folder)])
    assert a.exit_code == 0, a.output
    analyzed = json.loads(a.stdout)
    w = runner.invoke(cli, ["watch", "--once", "--json", str(folder)])
    assert w.exit_code == 0, w.output
    assert_renders_judgement(analyzed, json.loads(w.stdout))
    mon = LiveMonitor(folder, LiveConfig(console=False, write=False))
    try:
        mon.run_once()
        state = mon.snapshot()
    finally:
        mon.stop()
    return analyzed, state["verdict"] | {"states": {r["rank"]: r["state"] for r in state["ranks"]}}


def assert_renders_judgement(analyzed: dict[str, Any], once: dict[str, Any]) -> None:
    """`watch --once --json`'s object says exactly what analyze's JSON says."""
    v = once["state"]["verdict"]
    assert (v["verdict"], v["culprit_ranks"], v["stuck"]) == (
        analyzed["verdict"], analyzed["culprit_ranks"], analyzed["stuck"]), (v, analyzed["headline"])
    assert {r["rank"]: r["state"] for r in once["state"]["ranks"]} == {r["rank"]: r["state"] for r in analyzed["ranks"]}
    kinds = [al["kind"] for al in once["alerts"]]
    assert kinds == ([analyzed["verdict"]] if analyzed["verdict"] in LIVE else []), kinds


def assert_same_judgement(analyzed: dict[str, Any], live: dict[str, Any]) -> None:
    v = analyzed["verdict"]
    states = live.get("states") or {}
    if states and v != "config_error":  # the hook's records name the ranks: each in the same state
        assert states == {r["rank"]: r["state"] for r in analyzed["ranks"] if r["rank"] in states}, \
            (states, analyzed["ranks"])
    if v == "config_error" and live["verdict"] != "config_error":  # a setting only a listing or an init line
        assert live["verdict"] in ("healthy", "crash"), live  # names (the monitor reads failures' texts only)
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
