"""Logs: every line of the run's text inputs, filtered by file, rank, level, subsystem and text; paged
on the server (only the page on screen travels). Evidence links land here with ?file=...&line=...; opened
without one, the page opens on the verdict's first evidence line. NCCL, PyTorch and launcher logs come
first, the hook's records last, and its heartbeats (a line a second a rank) are hidden unless asked for."""
from __future__ import annotations

from typing import Any

import dash
import pandas as pd
from dash import (
    ClientsideFunction,
    Input,
    Output,
    State,
    callback,
    clientside_callback,
    ctx,
    dash_table,
    dcc,
    html,
)
from ncclscope.dashboard import ids
from ncclscope.dashboard.data import (
    FILE_ORDER,
    HEARTBEAT,
    Entry,
    RunStore,
    current,
    filter_logs,
    log_index,
    log_index_ready,
    page_of,
    page_with_line,
)

dash.register_page(__name__, path="/logs", name="Logs", order=5, title="ncclscope - logs")

PAGE_SIZE = 100
LEVELS = ["ERROR", "WARN", "INFO", "TRACE", "-"]
SHOW_HEARTBEATS = "heartbeats"


def layout(file: str | None = None, line: str | None = None, **_: Any) -> html.Div:
    try:
        target = {"file": file, "line": int(line)} if file and line is not None else None
    except ValueError:
        target = None
    return html.Div([
        dcc.Store(id=ids.LOG_TARGET, data=target),
        dcc.Store(id=ids.LOG_FOCUS),
        dcc.Store(id=ids.LOG_SCROLL),
        dcc.Interval(id=ids.LOG_POLL, interval=500, disabled=False),
        html.Div([
            html.Label(["file", dcc.Dropdown(id=ids.LOG_FILE, value=file, placeholder="all files")], className="ctl wide"),
            html.Label(["rank", dcc.Dropdown(id=ids.LOG_RANK, multi=True, placeholder="all ranks")], className="ctl"),
            html.Label(["level", dcc.Dropdown(id=ids.LOG_LEVEL, multi=True, placeholder="all levels",
                                              options=LEVELS)], className="ctl"),
            html.Label(["subsystem", dcc.Dropdown(id=ids.LOG_SUBSYS, multi=True, placeholder="all")], className="ctl"),
            html.Label(["search", dcc.Input(id=ids.LOG_SEARCH, type="text", debounce=True, placeholder="text")],
                       className="ctl"),
            dcc.Checklist(id=ids.LOG_SHOW, options=[{"label": " the hook's heartbeats", "value": SHOW_HEARTBEATS}],
                          value=[], className="ctl"),
        ], className="controls"),
        html.Div(id=ids.LOG_INFO, className="muted"),
        dash_table.DataTable(  # type: ignore[attr-defined]
            id=ids.LOG_TABLE, page_action="custom", page_current=0, page_size=PAGE_SIZE,
            columns=[{"name": c, "id": c} for c in ("file", "line", "rank", "level", "subsys", "text")],
            style_cell={"fontFamily": "monospace", "fontSize": "12px", "textAlign": "left", "whiteSpace": "pre",
                        "maxWidth": "900px", "overflow": "hidden", "textOverflow": "ellipsis", "padding": "2px 6px"},
            style_table={"overflowX": "auto"},
            style_data_conditional=[{"if": {"filter_query": '{level} = "WARN"'}, "backgroundColor": "#fff7e0"},
                                    {"if": {"filter_query": '{level} = "ERROR"'}, "backgroundColor": "#fde8e8"}],
        ),
    ])


def index(rs: RunStore, entry: Entry) -> pd.DataFrame | None:
    """The log index, or None while the job still builds it behind the analysis."""
    df = log_index_ready(entry)
    if df is None and not rs.busy(entry.key):
        df = log_index(entry)  # built elsewhere and dropped, or never built: build it here
    return df


def options(rs: RunStore, key: str | None) -> tuple[list, list, list]:
    entry = rs.get(key)
    df = index(rs, entry) if entry is not None else None
    if df is None:
        return [], [], []
    files = [str(f) for f in df["file"].cat.categories]
    ranks = sorted(int(r) for r in df["rank"].unique() if r >= 0)
    subs = sorted(str(s) for s in df["subsys"].cat.categories)
    return files, [{"label": f"rank {r}", "value": r} for r in ranks], subs


def focus(rs: RunStore, key: str | None, target: dict | None) -> dict | None:
    """The line the page opens on: ``target`` (an evidence link's), else an evidence line of the first finding
    (most severe first) with one in a text log, an NCCL / PyTorch log's line before a hook record; None when
    there is none or no index yet."""
    if target and target.get("file"):
        return target
    entry = rs.get(key)
    df = log_index_ready(entry) if entry is not None else None
    if entry is None or df is None or not len(df):
        return None
    logs = set(df["file"].cat.categories)
    fmts = dict(entry.analysis.run.files)
    for f in entry.analysis.findings:
        shown = [e for e in f.evidence if e.file in logs and e.line]
        if shown:
            e = min(shown, key=lambda e: FILE_ORDER.get(fmts.get(e.file, ""), 1))  # the first of the best kind
            return {"file": e.file, "line": int(e.line), "verdict": True}
    return None


def _is_heartbeat(df: pd.DataFrame, target: dict | None) -> bool:
    """Whether the line to open on is a heartbeat (then the heartbeats are listed, so that it is there)."""
    if not target or not target.get("file") or target["file"] not in set(df["file"].cat.categories):
        return False
    row = (df["file"] == target["file"]).to_numpy() & (df["line"] == int(target.get("line") or 0)).to_numpy()
    return bool((df["subsys"][row] == HEARTBEAT).any())


def page(rs: RunStore, key: str | None, file: str | None, ranks: list[int] | None, levels: list[str] | None,
         subsys: list[str] | None, search: str | None, page_current: int | None, target: dict | None,
         jump: bool, show: list[str] | None = None) -> tuple[list[dict], int, int, str, list[dict]]:
    """(rows of the page, page count, page shown, info line, row styles). ``jump``: go to the page of ``target``
    or, without one, of the verdict's evidence (``focus``). ``show``: SHOW_HEARTBEATS lists the hook's heartbeats."""
    entry = rs.get(key)
    base_styles = [{"if": {"filter_query": '{level} = "WARN"'}, "backgroundColor": "#fff7e0"},
                   {"if": {"filter_query": '{level} = "ERROR"'}, "backgroundColor": "#fde8e8"}]
    if entry is None:
        return [], 1, 0, "no run loaded", base_styles
    df = index(rs, entry)
    if df is None:
        return [], 1, 0, "indexing log lines for the log view (the other pages are ready)...", base_styles
    if not len(df):
        return [], 1, 0, ("no text logs among the inputs (Flight Recorder dumps are binary: their records are on the "
                          "Timeline and the Hang report)"), base_styles
    target = focus(rs, key, target)
    hidden = () if SHOW_HEARTBEATS in (show or ()) or _is_heartbeat(df, target) else (HEARTBEAT,)
    view = filter_logs(df, file, ranks, levels, subsys, search, hidden=hidden)
    pages = max(1, -(-len(view) // PAGE_SIZE))
    cur = min(max(page_current or 0, 0), pages - 1)
    styles = list(base_styles)
    info = f"{len(view):,} of {len(df):,} lines"
    if hidden and not subsys:
        beats = int((df["subsys"] == HEARTBEAT).sum())
        info += f" ({beats:,} heartbeat records of the hook hidden)" if beats else ""
    if target and target.get("file"):
        if jump:
            cur = page_with_line(view, target["file"], int(target.get("line") or 0), PAGE_SIZE)
        styles.append({"if": {"filter_query": f'{{line}} = {int(target.get("line") or 0)} && {{file}} = '
                                              f'"{str(target["file"]).replace(chr(34), "")}"'},
                       "backgroundColor": "#ffe08a", "fontWeight": "bold"})
        if target["file"] not in set(df["file"].cat.categories):
            info += f" - {target['file']} is not a text log (evidence from a dump); its line is quoted on the finding"
        else:
            whose = "the verdict's evidence" if target.get("verdict") else "evidence"
            info += (f" - {whose}: {target['file']} line {target.get('line')} highlighted"
                     f" (page {cur + 1} of {pages})")
    return page_of(view, cur, PAGE_SIZE), pages, cur, info, styles


@callback(Output(ids.LOG_FILE, "options"), Output(ids.LOG_RANK, "options"), Output(ids.LOG_SUBSYS, "options"),
          Output(ids.LOG_POLL, "disabled"), Input(ids.RUN_KEY, "data"), Input(ids.LOG_POLL, "n_intervals"))
def _options(key: str | None, _n: int | None) -> tuple[Any, Any, Any, bool]:
    rs = current()
    entry = rs.get(key)
    ready = entry is None or log_index_ready(entry) is not None or not rs.busy(key)
    files, ranks, subs = options(rs, key)
    return files, ranks, subs, ready


# once the page of the line it opened on is on screen, scroll its row into view (assets/scroll.js)
clientside_callback(ClientsideFunction(namespace="ncclscope", function_name="scrollToTarget"),
                    Output(ids.LOG_SCROLL, "data"), Input(ids.LOG_TABLE, "data"), State(ids.LOG_FOCUS, "data"))


@callback(Output(ids.LOG_TABLE, "data"), Output(ids.LOG_TABLE, "page_count"), Output(ids.LOG_TABLE, "page_current"),
          Output(ids.LOG_INFO, "children"), Output(ids.LOG_TABLE, "style_data_conditional"),
          Output(ids.LOG_FOCUS, "data"),
          Input(ids.RUN_KEY, "data"), Input(ids.LOG_FILE, "value"), Input(ids.LOG_RANK, "value"),
          Input(ids.LOG_LEVEL, "value"), Input(ids.LOG_SUBSYS, "value"), Input(ids.LOG_SEARCH, "value"),
          Input(ids.LOG_TABLE, "page_current"), Input(ids.LOG_POLL, "disabled"), Input(ids.LOG_SHOW, "value"),
          State(ids.LOG_TARGET, "data"))
def _page(key: str | None, file: str | None, ranks: list[int] | None, levels: list[str] | None,
          subsys: list[str] | None, search: str | None, page_current: int | None, _indexing: bool | None,
          show: list[str] | None, target: dict | None) -> tuple:
    jump = ctx.triggered_id in (None, ids.RUN_KEY, ids.LOG_FILE, ids.LOG_POLL, ids.LOG_SHOW)
    rs = current()
    return (*page(rs, key, file, ranks, levels, subsys, search, page_current, target, jump, show),
            focus(rs, key, target))
