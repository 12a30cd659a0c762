"""``create_app``: the Dash app factory (pages in ``pages/``, data in ``data.py``, figures in ``figures.py``).

The app shell holds the navigation, the run key (``dcc.Store``, the key only) and, in live mode,
the polling interval and the alert banner. Every request must carry the app's token (``access.py``);
big requests pass the uploads' memory gate (``upload_gate.py``).
"""
from __future__ import annotations

import ipaddress
import threading
from pathlib import Path
from typing import Any

import dash
from dash import Dash, Input, Output, State, dash_table, dcc, html, no_update
from flask import Response, request

from . import figures, ids
from .access import TOKEN_COOKIE, install_token_check, new_token  # noqa: F401 - TOKEN_COOKIE, new_token: old homes
from .data import MAX_UPLOAD_BYTES, RunStore, set_current
from .upload_gate import install_upload_gate

MAX_REQUEST_BYTES = MAX_UPLOAD_BYTES * 4 // 3 + 1024 * 1024  # an upload's base64 + the callback's JSON
PAGES = [("Overview", "/"), ("Topology", "/topology"), ("Timeline", "/timeline"), ("Hotspots", "/hotspots"),
         ("Hang report", "/hang"), ("Logs", "/logs"), ("Diff", "/diff")]
LIVE_POLL_MS = 2000

JOB_POLL_MS = 400


def is_loopback(host: str) -> bool:
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _reset_global_callbacks() -> None:
    # Pages register their callbacks on import; Dash re-imports the pages for every app it
    # creates, so leftovers from an earlier app (or a test import) would register twice.
    from dash import _callback

    _callback.GLOBAL_CALLBACK_LIST.clear()
    _callback.GLOBAL_CALLBACK_MAP.clear()


def create_app(path: Path | None = None, live: Path | None = None, token: str | None = None,
               run_store: RunStore | None = None, wait: bool = False, host: str = "127.0.0.1") -> Dash:
    """A Dash app over ``path`` (a finished run: folder, file or archive) or ``live`` (a run folder in progress).

    ``token``: every request must carry it (``?token=`` once, then a cookie; or ``Authorization: Bearer``);
    None makes a new one, found in ``app.server.config["ncclscope_token"]``. ``wait``:
    analyse ``path`` before returning instead of in the background. ``host``: the address bound; requests
    must name it (or a loopback name) in their Host header, and a POST from a browser must come from the
    same origin (``_install_origin_checks``).
    """
    rs = run_store or RunStore()
    set_current(rs)
    threading.Thread(target=figures.warm_up, name="ncclscope-plotly-warm-up", daemon=True).start()
    if path is not None:
        rs.default_key = rs.submit([Path(path)], Path(path).name or str(path))
        if wait:
            rs.wait(rs.default_key)
    if live is not None:
        rs.start_live(Path(live))

    _reset_global_callbacks()
    # named after the package so the pages import as ncclscope.dashboard.pages.<name>, the modules tests import
    app = Dash("ncclscope.dashboard", use_pages=True, pages_folder=str(Path(__file__).parent / "pages"),
               suppress_callback_exceptions=True, title="ncclscope",
               update_title=None)  # type: ignore[arg-type]
    app.server.config["MAX_CONTENT_LENGTH"] = MAX_REQUEST_BYTES
    app.server.config["ncclscope_store"] = rs
    app.server.config["ncclscope_token"] = token = token or new_token()
    _install_origin_checks(app, host)
    install_token_check(app.server, token)  # every route, every bind: loopback is shared by every user of the node
    install_upload_gate(app, rs)

    nav = [dcc.Link(name, href=href, className="nav-link", id=f"nav-{href.strip('/') or 'overview'}")
           for name, href in PAGES]
    shell: list[Any] = [
        html.Header([html.Span("ncclscope", className="brand"), html.Nav(nav, id=ids.NAV),
                     html.Span(id=ids.RUN_LABEL, className="run-label")], className="top"),
        html.Div(id=ids.LIVE_BANNER),
        html.Div(id=ids.JOB_STATUS),
        dcc.Store(id=ids.RUN_KEY, storage_type="session", data=rs.default_key),
        dcc.Store(id=ids.PENDING_KEY, data=rs.default_key),
        dcc.Interval(id=ids.JOB_POLL, interval=JOB_POLL_MS, disabled=rs.default_key is None),
        html.Main(dash.page_container, className="page"),
        # an empty hidden graph: the browser loads plotly.js with the shell, not on the first page with a figure
        dcc.Graph(id="plotly-preload", figure={"data": [], "layout": {}}, style={"display": "none"}),
        html.Div(dash_table.DataTable(id="table-preload", data=[], columns=[]),  # type: ignore[attr-defined]
                 style={"display": "none"}),  # and the table's code, for the Hang report and the log view
    ]
    if live is not None:
        shell.append(dcc.Interval(id=ids.LIVE_INTERVAL, interval=LIVE_POLL_MS, n_intervals=0))
    app.layout = html.Div(shell)

    @app.callback(Output(ids.RUN_LABEL, "children"), Input(ids.RUN_KEY, "data"))
    def _label(key: str | None) -> str:
        return run_label(rs, key)

    @app.callback(Output(ids.RUN_KEY, "data", allow_duplicate=True), Output(ids.PENDING_KEY, "data"),
                  Output(ids.JOB_POLL, "disabled"), Output(ids.JOB_STATUS, "children"),
                  Input(ids.JOB_POLL, "n_intervals"), Input(ids.PENDING_KEY, "data"),
                  prevent_initial_call="initial_duplicate")
    def _poll(_n: int | None, pending: str | None) -> tuple[Any, Any, bool, Any]:
        return poll_job(rs, pending)

    if live is not None:
        @app.callback(Output(ids.RUN_KEY, "data", allow_duplicate=True), Output(ids.LIVE_BANNER, "children"),
                      Input(ids.LIVE_INTERVAL, "n_intervals"), State(ids.RUN_KEY, "data"),
                      prevent_initial_call="initial_duplicate")
        def _live(_n: int, current: str | None) -> tuple[Any, Any]:
            return live_update(rs, current)

    @app.server.route("/metrics")
    def _metrics() -> Response:  # behind the same token check as every other request
        text = metrics_text(rs)
        return Response(text or "# no analysis yet\n", status=200 if text else 503,
                        mimetype="text/plain; version=0.0.4")

    return app


def metrics_text(rs: RunStore) -> str | None:
    """The newest analysis (the live folder's, else the one served) in Prometheus' text format, with
    the live monitor's alerts; None before the first analysis."""
    from ncclscope.alerts_file import ALERTS_FILE, read_alerts
    from ncclscope.export.prometheus import prometheus_text

    key = rs.live_poll()[0] if rs.live_dir is not None else rs.default_key
    entry = rs.get(key)
    if entry is None:
        return None
    alerts = read_alerts(rs.live_dir / ALERTS_FILE) if rs.live_dir is not None else []
    return entry.cached("prometheus", lambda: prometheus_text(entry.analysis, alerts)) if rs.live_dir is None \
        else prometheus_text(entry.analysis, alerts)


def run_label(rs: RunStore, key: str | None) -> str:
    entry = rs.get(key)
    if entry is not None:
        return f"{entry.label} - {entry.analysis.decision.verdict.value}"
    st = rs.status(key)
    if st is not None:
        return f"{st['label']} - {st['state']}"
    return "no run loaded"


def poll_job(rs: RunStore, pending: str | None) -> tuple[Any, Any, bool, Any]:
    """(run key, pending key, poll disabled, status line) for the job being parsed, if any."""
    if not pending:
        return no_update, None, True, None
    st = rs.status(pending)
    if st is None:
        return no_update, None, True, html.Div("that analysis is gone (the server restarted?)", className="banner error")
    if st["state"] == "done":
        return pending, None, True, None
    if st["state"] == "error":
        return no_update, None, True, html.Div(f"{st['label']}: {st['message']}", className="banner error",
                                               id="job-error")
    pct = f" {100 * st['done'] // st['total']}%" if st["total"] else ""
    return no_update, pending, False, html.Div(
        [html.Progress(value=str(st["done"]), max=str(max(st["total"], 1))),
         html.Span(f" {st['label']}: {st['state']}{pct} {st['message']} ({st['elapsed_s']:.1f} s)")],
        className="banner progress", id="job-progress")


def live_update(rs: RunStore, current: str | None) -> tuple[Any, Any]:
    """The live poll: the newest analysis key when it changed, and the newest alert as a banner."""
    key, alert = rs.live_poll()
    banner: Any = html.Div(f"live: watching {rs.live_dir} - "
                           + ("waiting for the first analysis" if key is None else "up to date"),
                           className="banner live")
    if alert:
        ranks = ", ".join(map(str, alert.get("culprit_ranks") or [])) or "-"
        banner = html.Div([html.B(f"ALERT {alert.get('time') or ''} {str(alert.get('kind', '')).upper()}: "),
                           html.Span(f"{alert.get('message', '')} (culprit rank(s): {ranks})")],
                          className="banner alert", id="live-alert")
    return (key if key and key != current else no_update), banner


LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", ""})  # bound to every interface: only the token guards


def allowed_hosts(host: str) -> frozenset[str] | None:
    """Host header names a server bound to ``host`` answers (None: any, for a wildcard bind)."""
    if host in WILDCARD_HOSTS:
        return None
    return LOOPBACK_NAMES | {host.strip("[]").lower()}


def host_name(header: str) -> str:
    """The name in a Host header or an Origin's netloc, without port or brackets: '[::1]:8050' -> '::1'."""
    h = header.strip().lower()
    if h.startswith("["):
        return h[1:].split("]", 1)[0]
    return h.rsplit(":", 1)[0] if h.count(":") == 1 else h


def _install_origin_checks(app: Dash, host: str) -> None:
    """A page on another site must not reach the dashboard: a DNS-rebinding page talks to 127.0.0.1 under
    its own name (refused by the Host allow-list), and a cross-site form or fetch POSTs with its own Origin
    (refused unless the Origin is this server). Requests without an Origin (curl, scripts) pass the second."""
    names = allowed_hosts(host)
    server = app.server

    @server.before_request
    def _check_host() -> Any:
        if names is not None and host_name(request.host or "") not in names:
            return Response("ncclscope: unknown Host header; open the dashboard by the address it was "
                            "started with (--host)\n", status=421, mimetype="text/plain")
        if request.method not in ("GET", "HEAD", "OPTIONS"):
            if request.content_length is None and "chunked" in request.headers.get("Transfer-Encoding", "").lower():
                # a body of unknown length is not read at all (browsers send a Content-Length; a known one over
                # MAX_CONTENT_LENGTH is refused by werkzeug with 413 before any of it is read)
                return Response("ncclscope: a request body needs a Content-Length\n", status=411, mimetype="text/plain")
            origin = request.headers.get("Origin")
            if origin is not None:
                from urllib.parse import urlsplit

                netloc = urlsplit(origin).netloc.lower() if origin != "null" else ""
                if netloc != (request.host or "").lower():
                    return Response("ncclscope: cross-origin request refused\n", status=403, mimetype="text/plain")
        return None
