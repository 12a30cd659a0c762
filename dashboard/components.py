"""Small shared pieces of page content (pure: model in, Dash components out)."""
from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from dash import dcc, html
from ncclscope.model import Evidence, Finding, Job
from ncclscope.nccl.risky_settings import SETTING_WARNINGS
from ncclscope.text_fit import evidence_line
from ncclscope.verdict import Decision

from .data import RunStore

VERDICT_CLASS = {"healthy": "ok", "degraded": "warn", "unknown": "neutral"}

def log_href(file: str, line: int) -> str:
    return "/logs?" + urlencode({"file": file, "line": int(line or 0)})


def evidence_list(evidence: tuple[Evidence, ...] | list[Evidence], limit: int = 6) -> html.Ul:
    items = []
    for e in list(evidence)[:limit]:
        loc = f"{e.file}:{e.line}" if e.line else e.file
        items.append(html.Li([dcc.Link(loc, href=log_href(e.file, e.line), className="ev-link"), " ",
                              html.Code(evidence_line(e.text, 240))]))
    if len(evidence) > limit:
        items.append(html.Li(f"... and {len(evidence) - limit} more", className="muted"))
    return html.Ul(items, className="evidence")


def verdict_banner(decision: Decision) -> html.Div:
    v = decision.verdict.value
    parts: list[Any] = [html.Span(v.upper(), className="verdict-word"), html.Span(decision.headline)]
    if decision.culprit_ranks:
        parts.append(html.Div(["culprit: ", html.B(", ".join(f"rank {r}" for r in decision.culprit_ranks))],
                              className="culprit", id="culprit"))
    if decision.stuck:
        s = decision.stuck
        parts.append(html.Div(f"stuck at: process group {s.pg}, collective #{s.seq}" + (f" ({s.op})" if s.op else ""),
                              className="stuck"))
    return html.Div(parts, className=f"banner verdict {VERDICT_CLASS.get(v, 'bad')}", id="verdict-banner")


def finding_card(f: Finding) -> html.Div:
    head = [html.Span(f.severity.value.upper(), className=f"sev sev-{f.severity.value}"), html.B(f" {f.label}: "),
            html.Span(f.message)]
    body: list[Any] = [html.Div(head)]
    if f.ranks:
        body.append(html.Div("ranks: " + ", ".join(map(str, f.ranks[:64])) + (" ..." if len(f.ranks) > 64 else ""),
                             className="muted"))
    if f.hint:
        body.append(html.Div(["fix: ", f.hint], className="hint"))
    if f.evidence:
        body.append(evidence_list(f.evidence))
    return html.Div(body, className="finding")


def settings_rows(job: Job) -> list[dict[str, str]]:
    """Each setting with a warning when it is one that changes NCCL's behaviour."""
    rows = []
    for name, s in sorted(job.settings.items()):
        warn = ""
        if name in SETTING_WARNINGS:
            value, text = SETTING_WARNINGS[name]
            if value is None or s.value.strip().upper() == value:
                warn = text
        rows.append({"name": name, "value": s.value, "source": s.source, "warning": warn})
    if len(set(job.nccl_versions.values())) > 1:
        rows.insert(0, {"name": "NCCL version", "value": ", ".join(sorted(set(job.nccl_versions.values()))),
                        "source": "nccl-log", "warning": "ranks run different NCCL versions"})
    return rows


def table(rows: list[dict[str, Any]], columns: list[str], cls: str = "grid", max_rows: int = 2000) -> html.Table:
    head = html.Thead(html.Tr([html.Th(c) for c in columns]))
    body = html.Tbody([html.Tr([html.Td("" if r.get(c) is None else str(r.get(c))) for c in columns],
                               className="warn-row" if r.get("warning") else None) for r in rows[:max_rows]])
    return html.Table([head, body], className=cls)


def not_ready(rs: RunStore, key: str | None) -> html.Div:
    """What a page shows when its run is not (yet) analysed."""
    st = rs.status(key)
    if st is None:
        return html.Div([("No run loaded. Drop log files, Flight Recorder dumps or a .zip / .tar.gz of a run "
                         "folder on the "), dcc.Link("Overview", href="/"), " page."], className="muted empty")
    if st["state"] == "error":
        return html.Div(f"{st['label']}: {st['message']}", className="banner error")
    return html.Div(f"{st['label']}: {st['state']} {st['message']}", className="muted empty")
