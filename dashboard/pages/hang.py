"""Hang report: culprit, every rank's last enqueued / completed collective per process group, stacks, evidence.

The per-rank state at the stuck collective and the culprit flags come from the decision's own finding
(``metrics.progress``), so the table can never contradict the verdict above it."""
from __future__ import annotations

from typing import Any

import dash
from dash import Input, Output, callback, dash_table, dcc, html
from ncclscope.dashboard import ids
from ncclscope.dashboard.components import evidence_list, not_ready, verdict_banner
from ncclscope.dashboard.data import RunStore, current
from ncclscope.dashboard.tables import rank_status_rows
from ncclscope.model import FindingKind

dash.register_page(__name__, path="/hang", name="Hang report", order=4, title="ncclscope - hang report")

COLUMNS = ["rank", "pg", "last_enqueued", "last_completed", "at_stuck", "culprit", "state", "source", "where"]


def layout(**_: Any) -> html.Div:
    return html.Div(dcc.Loading(html.Div(id=ids.HANG_BODY), delay_show=300))


def render(rs: RunStore, key: str | None) -> Any:
    entry = rs.get(key)
    if entry is None:
        return not_ready(rs, key)
    a = entry.analysis
    hangs = [f for f in a.findings if f.kind in (FindingKind.HANG, FindingKind.DESYNC)]
    rows = entry.cached("rank_status", lambda: rank_status_rows(a))
    out: list[Any] = [verdict_banner(a.decision)]
    if not hangs and a.decision.stuck is None:
        out.append(html.Div("No hang or desync found in this run; the table shows where each rank got to "
                            "(Flight Recorder pg_status, the hook's heartbeats, or the collectives recorded).",
                            className="muted"))
    for f in hangs:
        out += [html.H3(f"{f.label}: {f.message}"), html.Div(["fix: ", f.hint or "-"], className="hint")]
        where = f.data.get("where") or {}
        if where:
            out += [html.H4("Where the ranks are"),
                    html.Ul([html.Li([html.B(f"rank {r}: "), html.Code(str(w))]) for r, w in sorted(where.items())],
                            id="hang-where")]
        out += [html.H4("Evidence"), evidence_list(f.evidence, limit=12)]
    if a.run.stacks:
        out += [html.H4("Stack snapshots"),
                html.Ul([html.Li([html.B(f"rank {r}: "), html.Pre(str(s)[:4000])]) for r, s in
                         sorted(a.run.stacks.items())[:256]])]
    out += [html.H3("Every rank's last collective per process group"),
            dash_table.DataTable(  # type: ignore[attr-defined]
                id="hang-ranks", data=rows, columns=[{"name": c, "id": c} for c in COLUMNS if c != "state" or
                                                     any("state" in r for r in rows)], page_size=50,
                sort_action="native", filter_action="native",
                style_cell={"fontFamily": "monospace", "fontSize": "12px", "textAlign": "left", "padding": "2px 6px"},
                style_data_conditional=[{"if": {"filter_query": '{culprit} = "yes"'}, "backgroundColor": "#fde8e8",
                                         "fontWeight": "bold"}])]
    return html.Div(out)


@callback(Output(ids.HANG_BODY, "children"), Input(ids.RUN_KEY, "data"))
def _render(key: str | None) -> Any:
    return render(current(), key)
