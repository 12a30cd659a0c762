"""Diff: two analysed runs of one job side by side (``ncclscope.compare``, what ``ncclscope diff`` prints): every
difference, most likely to matter for speed first, with where each run shows it, and both runs' bus bandwidth
against message size. The runs are the analyses this server holds (uploads, the run it was started on, the two
given to ``ncclscope serve --diff A B``), picked by key; only the keys travel to the browser."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import dash
import plotly.graph_objects as go
from dash import Input, Output, callback, dcc, html
from ncclscope.compare import Comparison, Difference, Side, compare
from ncclscope.compare.render import where
from ncclscope.compare.speed import busbw_groups
from ncclscope.dashboard import figures, ids
from ncclscope.dashboard.data import Entry, RunStore, current
from ncclscope.text_fit import evidence_line

PATH = "/diff"
dash.register_page(__name__, path=PATH, name="Diff", order=6, title="ncclscope - diff")

DIFF_PAIR = "ncclscope_diff"  # the Flask config key of the (A, B) keys ``serve --diff`` analysed, when it did
PICK = ("Pick two analysed runs: upload each on the Overview page, or start the dashboard with "
        "ncclscope serve --diff RUN_A RUN_B.")


def serve_pair(app: Any, runs: tuple[Path, Path], wait_s: float = 5.0) -> str:
    """Analyse ``runs`` (A, B) in the app's store before it serves (``ncclscope serve --diff``), make them the
    page's default pair, and return the page's path. An input that cannot be read raises ``InputError``."""
    from ncclscope.ingest import InputError

    rs: RunStore = app.server.config["ncclscope_store"]
    keys = [rs.submit([p], p.name or str(p)) for p in runs]  # both parse at once
    for key in keys:
        while rs.get(key) is None:
            st = rs.status(key)
            if st is None or st["state"] == "error":
                raise InputError(f"{st['label'] if st else key}: {st['message'] if st else 'not analysed'}")
            rs.wait(key, wait_s)
    app.server.config[DIFF_PAIR] = (keys[0], keys[1])
    return PATH.lstrip("/")


def choices(rs: RunStore) -> list[dict[str, str]]:
    """The analyses the server holds, oldest first, as dropdown options (label, key)."""
    return [{"label": label, "value": key} for key, label in rs.analysed()]


def default_pair(rs: RunStore, given: tuple[str, str] | None) -> tuple[str | None, str | None]:
    """The pair ``serve --diff`` gave, else the two oldest analyses held (A the older), else what there is."""
    if given is not None:
        return given
    keys = [key for key, _ in rs.analysed()]
    return (keys[0] if keys else None), (keys[1] if len(keys) > 1 else None)


def layout(**_: Any) -> html.Div:
    from flask import current_app

    rs = current()
    a, b = default_pair(rs, current_app.config.get(DIFF_PAIR))
    opts = choices(rs)
    return html.Div([
        html.Div([html.Label(["A (the good run) ", dcc.Dropdown(id=ids.DIFF_A, options=opts, value=a,
                                                                clearable=False, style={"minWidth": "22em"})],
                             className="ctl"),
                  html.Label(["B (the bad run) ", dcc.Dropdown(id=ids.DIFF_B, options=opts, value=b,
                                                               clearable=False, style={"minWidth": "22em"})],
                             className="ctl")], className="controls"),
        dcc.Loading(html.Div(id=ids.DIFF_BODY), delay_show=300),
        dcc.Graph(id=ids.DIFF_BUSBW, config={"displaylogo": False}),
    ])


def _side_cell(side: Side) -> Any:
    e = side.evidence
    value = side.value if side.value is not None else "-"
    if e is None:
        return html.Td(value)
    return html.Td([value, html.Br(), html.Code(where(e), title=evidence_line(e.text, 300), className="ev-loc")])


def _row(n: int, d: Difference) -> html.Tr:
    return html.Tr([html.Td(str(n)), html.Td(d.tier.word, className=f"tier tier-{d.tier.word}"),
                    html.Td(d.message), _side_cell(d.a), _side_cell(d.b)],
                   className="warn-row" if d.direction.value == "slower" else None)


def body(c: Comparison) -> html.Div:
    """The comparison as the page shows it: both verdicts, the differences as a table, what was not compared."""
    out: list[Any] = [html.Div([html.B(f"{tag}: "), html.Span(s.label), " - ",
                                html.B(s.verdict.value.upper()), " ", html.Span(s.headline)],
                               className="muted", id=f"diff-run-{tag.lower()}") for tag, s in (("A", c.a), ("B", c.b))]
    if not c.differences:
        out.append(html.Div("No difference found in what both runs show.", className="muted empty"))
    else:
        out += [html.H3(f"{len(c.differences)} difference{'s' if len(c.differences) != 1 else ''}, most likely to "
                        "matter for speed first"),
                html.Table([html.Thead(html.Tr([html.Th(x) for x in ("#", "tier", "difference", "A", "B")])),
                            html.Tbody([_row(n, d) for n, d in enumerate(c.differences, 1)])],
                           className="grid", id="diff-table")]
    if c.not_compared:
        out += [html.H4("Not compared"), html.Ul([html.Li(x) for x in c.not_compared], id="diff-not-compared")]
    return html.Div(out)


def comparison(ea: Entry, eb: Entry) -> Comparison:
    """A against B, computed once per pair (kept with B's entry)."""
    return eb.cached(("diff", ea.key), lambda: compare(ea.analysis, eb.analysis, ea.label, eb.label))


def render(rs: RunStore, key_a: str | None, key_b: str | None) -> tuple[Any, go.Figure]:
    """(the differences, the busbw figure) of runs ``key_a`` and ``key_b``; a plain message while either is
    missing or both are one run."""
    ea, eb = rs.get(key_a), rs.get(key_b)
    if ea is None or eb is None:
        return html.Div(PICK, className="muted empty"), figures.empty_figure("two runs to compare")
    if ea.key == eb.key:
        return html.Div("A and B are the same run: pick another for one of them.", className="muted empty"), \
            figures.empty_figure("two runs to compare")
    ga = ea.cached("busbw_groups", lambda: busbw_groups(ea.analysis.run))
    gb = eb.cached("busbw_groups", lambda: busbw_groups(eb.analysis.run))
    return body(comparison(ea, eb)), figures.busbw_pair_figure(ga, gb, ea.label, eb.label)


@callback(Output(ids.DIFF_A, "options"), Output(ids.DIFF_B, "options"), Input(ids.RUN_KEY, "data"))
def _options(_key: str | None) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    opts = choices(current())  # a run analysed since the page opened (an upload) joins the choices
    return opts, opts


@callback(Output(ids.DIFF_BODY, "children"), Output(ids.DIFF_BUSBW, "figure"),
          Input(ids.DIFF_A, "value"), Input(ids.DIFF_B, "value"))
def _render(key_a: str | None, key_b: str | None) -> tuple[Any, Any]:
    return render(current(), key_a, key_b)
