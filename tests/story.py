"""What every output of ncclscope says about one run folder, read back from the output itself: the text
report, `analyze --json`, the run's own report.json, `watch --once --json`, the live alerts the run raised
(alerts.jsonl), the data behind the dashboard's Overview, Hang and Timeline pages, the Perfetto trace and the
Prometheus textfile. ``assert_one_story`` holds them to `analyze --json`: one verdict, the same culprits, the
same stuck collective, the same state of every rank, the same completed count at the stuck collective.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from plotly.utils import PlotlyJSONEncoder


@dataclass
class Told:
    """What one output says; None where the output does not say it."""

    verdict: str | None = None
    culprits: list[int] | None = None
    stuck: tuple[str, int] | None = None
    states: dict[int, str] | None = None
    completed: dict[int, int] | None = None  # at the stuck collective's process group
    extra: dict[str, Any] = field(default_factory=dict)


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = os.environ | {"COLUMNS": "400"}
    return subprocess.run([sys.executable, "-m", "ncclscope", *args], capture_output=True, text=True, timeout=600,
                          env=env, check=False)


def _stuck(st: dict[str, Any] | None) -> tuple[str, int] | None:
    return (str(st["pg"]), int(st["seq"])) if st else None


def _from_report(r: dict[str, Any]) -> Told:
    stuck = _stuck(r["stuck"])
    done = None
    if stuck is not None:
        done = {x["rank"]: x["pg_status"][stuck[0]]["last_completed"] for x in r["ranks"]
                if stuck[0] in x["pg_status"] and x["pg_status"][stuck[0]]["last_completed"] is not None}
    return Told(r["verdict"], sorted(r["culprit_ranks"]), stuck, {x["rank"]: x["state"] for x in r["ranks"]}, done,
                {"findings": [(f["kind"], f["severity"], f.get("echo_of")) for f in r["findings"]]})


def _ranks(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        a, _, b = part.strip().partition("-")
        if a.strip().isdigit():
            out += list(range(int(a), int(b) + 1)) if b.strip().isdigit() else [int(a)]
    return out


def _from_text(out: str) -> Told:
    verdict = re.search(r"^VERDICT: (\w+)", out, re.M)
    culprits = re.search(r"^Culprit rank\(s\): (.+)$", out, re.M)
    stuck = re.search(r"^Stuck at: process group (\S+), collective #(\d+)", out, re.M)
    states: dict[int, str] = {}
    line = re.search(r"^Ranks: (.+)$", out, re.M)
    for part in (line.group(1).split("; ") if line else []):
        state, _, ranks = part.partition(" ")
        states.update({r: state for r in _ranks(ranks)})
    return Told(verdict.group(1).lower() if verdict else None, _ranks(culprits.group(1)) if culprits else [],
                (stuck.group(1), int(stuck.group(2))) if stuck else None, states or None)


def _from_watch(obj: dict[str, Any]) -> Told:
    st = obj["state"]
    v = st["verdict"]
    stuck = _stuck(v["stuck"])
    done = {r["rank"]: r["completed"][stuck[0]] for r in st["ranks"] if stuck and stuck[0] in r["completed"]}
    return Told(v["verdict"], sorted(v["culprit_ranks"]), stuck, {r["rank"]: r["state"] for r in st["ranks"]},
                done if stuck else None, {"alerts": [a["kind"] for a in obj["alerts"]]})


def _from_alerts(path: Path) -> Told | None:
    from ncclscope.verdict import of_alerts

    if not path.is_file():
        return None
    alerts = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    v = of_alerts(alerts)
    return Told(v["verdict"], sorted(v["culprit_ranks"]), _stuck(v["stuck"]))


def _from_dashboard(folder: Path, store: Path) -> dict[str, Told]:
    """The Overview banner, the Hang page's table and the Timeline's counts, as the pages compute them."""
    from ncclscope.dashboard.app import create_app
    from ncclscope.dashboard.data import RunStore
    from ncclscope.dashboard.tables import rank_status_rows
    from ncclscope.metrics.timeline import completed_through

    rs = RunStore(store)
    create_app(run_store=rs)  # registers the pages: their modules import after it
    from ncclscope.dashboard.pages import overview

    try:
        key = rs.analyze([folder], folder.name)
        entry = rs.get(key)
        assert entry is not None
        a = entry.analysis
        page = json.loads(json.dumps(overview.render(rs, key), cls=PlotlyJSONEncoder))
        word = _find(page, lambda p: p.get("className") == "verdict-word")
        verdict = str(word["children"]).lower() if word else None
        culprit = _find(page, lambda p: p.get("id") == "culprit")
        culprits = sorted(int(x) for x in re.findall(r"rank (\d+)", json.dumps(culprit))) if culprit else []
        rows = rank_status_rows(a)
        stuck = a.decision.stuck
        states = {r["rank"]: r["state"].replace(" ", "_") for r in rows if r.get("state")}
        hang_done = {r["rank"]: r["last_completed"] for r in rows
                     if stuck is not None and r["pg"] == str(stuck.pg) and r["last_completed"] is not None}
        tl_done = completed_through(a.run, a.findings, stuck.pg, stuck) if stuck is not None else None
        return {"dashboard overview": Told(verdict, culprits),
                "dashboard hang page": Told(states=states or None, completed=hang_done if stuck else None),
                "dashboard timeline": Told(completed=tl_done)}
    finally:
        rs.close()


def _find(node: Any, want: Any) -> dict[str, Any] | None:
    """The first component (a rendered Dash tree, as JSON) whose props ``want`` accepts."""
    if isinstance(node, dict):
        props = node.get("props")
        if isinstance(props, dict) and want(props):
            return props
        kids = props.get("children") if isinstance(props, dict) else None
        return _find(kids, want) if kids is not None else None
    if isinstance(node, list):
        for x in node:
            got = _find(x, want)
            if got is not None:
                return got
    return None


def _from_perfetto(path: Path) -> Told:
    d = json.loads(path.read_text())
    o = d["otherData"]
    waits = {e["pid"]: e["dur"] for e in d["traceEvents"] if e.get("args", {}).get("stuck")}
    return Told(o["verdict"], sorted(o["culprit_ranks"]), _stuck(o["stuck"]), extra={"stuck_us": waits})


def _from_prometheus(path: Path) -> Told:
    text = path.read_text()
    verdict = re.search(r'^ncclscope_verdict\{verdict="(\w+)"\} 1(?:\.0)?$', text, re.M)
    culprits = sorted(int(r) for r in re.findall(r'^ncclscope_culprit_rank\{rank="(\d+)"\} 1', text, re.M))
    stuck = re.search(r'^ncclscope_stuck_seq\{pg="([^"]*)",op="[^"]*"\} (\d+)', text, re.M)
    done = None
    if stuck:
        done = {int(r): int(float(v)) for r, v in re.findall(
            rf'^ncclscope_rank_last_completed_seq\{{rank="(\d+)",pg="{re.escape(stuck.group(1))}"\}} (\S+)$', text, re.M)}
    return Told(verdict.group(1) if verdict else None, culprits, (stuck.group(1), int(stuck.group(2))) if stuck else None,
                completed=done)


def told(folder: Path, scratch: Path, report_json: bool = True) -> dict[str, Told]:
    """Every output's account of ``folder``; ``scratch``: a private folder for the exports and the store;
    ``report_json``: read the folder's report.json too (False for a run recorded by an earlier release)."""
    scratch.mkdir(parents=True, exist_ok=True)
    js = cli("analyze", "--json", "--no-cache", str(folder))
    assert js.returncode == 0, js.stderr
    out = {"analyze --json": _from_report(json.loads(js.stdout))}
    text = cli("analyze", "--no-cache", str(folder))
    assert text.returncode == 0, text.stderr
    out["analyze (text)"] = _from_text(text.stdout)
    out["analyze (text)"].extra["text"] = text.stdout
    if report_json and (folder / "report.json").is_file():
        out["report.json"] = _from_report(json.loads((folder / "report.json").read_text()))
    w = cli("watch", "--once", "--json", str(folder))
    assert w.returncode == 0, w.stderr
    out["watch --once"] = _from_watch(json.loads(w.stdout))
    live = _from_alerts(folder / "alerts.jsonl")
    if live is not None:
        out["live alerts"] = live
    out |= _from_dashboard(folder, scratch / "store")
    perfetto, prom = scratch / "trace.json", scratch / "state.prom"
    e = cli("export", str(folder), "--perfetto", str(perfetto), "--prometheus", str(prom))
    assert e.returncode == 0, e.stderr
    out["perfetto"] = _from_perfetto(perfetto)
    out["prometheus"] = _from_prometheus(prom)
    return out


INCIDENTS = {"hang", "desync", "crash", "config_error"}


def assert_one_story(stories: dict[str, Told]) -> Told:
    """Every output says what `analyze --json` says; returns that."""
    ref = stories["analyze --json"]
    bad = []
    for name, t in stories.items():
        if name == "live alerts":  # the live monitor raises incidents only; healthy when none stands
            want = ref.verdict if ref.verdict in INCIDENTS else "healthy"
            if t.verdict != want or (want in INCIDENTS and t.culprits != ref.culprits):
                bad.append(f"{name}: {t.verdict} {t.culprits}, analyze: {ref.verdict} {ref.culprits}")
            continue
        for attr in ("verdict", "culprits", "stuck", "states", "completed"):
            got, want_ = getattr(t, attr), getattr(ref, attr)
            if got is not None and want_ is not None and got != want_:
                bad.append(f"{name} {attr}: {got}, analyze --json: {want_}")
            elif got is not None and want_ is None and attr in ("stuck",):
                bad.append(f"{name} {attr}: {got}, analyze --json: none")
    assert not bad, "\n".join(bad)
    return ref
