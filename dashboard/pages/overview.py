"""Overview: upload, verdict banner, culprit ranks, job facts, NCCL settings, findings with evidence."""
from __future__ import annotations

from typing import Any

import dash
from dash import Input, Output, State, callback, dcc, html, no_update
from ncclscope.dashboard import ids
from ncclscope.dashboard.components import finding_card, not_ready, settings_rows, table, verdict_banner
from ncclscope.dashboard.data import MAX_UPLOAD_BYTES, Entry, RunStore, UploadError, current

dash.register_page(__name__, path="/", name="Overview", order=0, title="ncclscope - overview")


def layout(**_: Any) -> html.Div:
    return html.Div([
        dcc.Upload(id=ids.UPLOAD, multiple=True, max_size=MAX_UPLOAD_BYTES, className="upload",
                   children=html.Div([("Drop log files, Flight Recorder dumps, or a .zip / .tar.gz of a run folder "
                                      "here, or "), html.A("choose files"),
                                      f" (at most {MAX_UPLOAD_BYTES // 2**20} MB in all)"])),
        html.Div(id=ids.UPLOAD_STATUS),
        dcc.Store(id=ids.UPLOAD_KEY),
        dcc.Loading(html.Div(id=ids.OVERVIEW_BODY), delay_show=300),
    ])


def render(rs: RunStore, key: str | None) -> Any:
    entry = rs.get(key)
    if entry is None:
        return not_ready(rs, key)
    a = entry.analysis
    run, job = a.run, a.run.job
    out: list[Any] = [verdict_banner(a.decision),
                      html.H3(f"Findings ({len(a.findings)})"),
                      html.Div([finding_card(f) for f in a.findings] or [html.Div("nothing found", className="muted")],
                               id="findings"),
                      html.H3("Job"),
                      html.Table(html.Tbody([html.Tr([html.Th(k), html.Td(v)]) for k, v in job_facts(entry)]),
                                 className="facts", id="job-facts")]
    out += settings_block(settings_rows(job))
    if run.problems:
        out += [html.H3("Skipped inputs"), html.Ul([html.Li(p) for p in run.problems[:50]], className="muted")]
    return html.Div(out)


def job_facts(entry: Entry) -> list[tuple[str, str]]:
    """The job's facts as (name, text); what no input recorded says which input would."""
    a = entry.analysis
    run, job = a.run, a.run.job
    hosts = list(job.hosts)
    ranks = run.ranks()
    comms = run.communicators
    return [
        ("world size", str(job.world_size or (len(ranks) if ranks else "?"))),
        ("hosts", f"{len(hosts)}: " + ", ".join(hosts[:8]) + (" ..." if len(hosts) > 8 else "") if hosts
         else "not recorded (NCCL's INFO lines name them; a gloo-only run has none)"),
        ("NCCL", job.nccl_version or "not used or not logged (NCCL_DEBUG=INFO prints the version)"),
        ("PyTorch", job.torch_version or "?"), ("CUDA", job.cuda_version or "?"),
        ("exit code", "?" if job.exit_code is None else str(job.exit_code)),
        ("communicators", str(len(comms)) if comms else "none: NCCL communicators appear in NCCL_DEBUG=INFO logs "
         "(gloo has none)"),
        ("collective records", ", ".join(f"{rows:,} {src} over {n} ranks" for src, rows, n in run.timeline_summary())
         or "none"),
        ("input files", str(len(run.files))), ("analysed in", f"{entry.parse_s:.2f} s"),
    ]


def settings_block(settings: list[dict[str, str]]) -> list[Any]:
    """Settings with a warning in view; the rest (most are the wrapper's own) folded under a summary line."""
    if not settings:
        return [html.H3("NCCL and PyTorch settings"), html.Div("none recorded", className="muted")]
    warned = [r for r in settings if r["warning"]]
    quiet = [r for r in settings if not r["warning"]]
    by_wrapper = sum(1 for r in quiet if r["source"] == "wrapper")
    out: list[Any] = [html.H3("NCCL and PyTorch settings")]
    if warned:
        out.append(table(warned, ["name", "value", "source", "warning"]))
    out.append(html.Details([html.Summary(f"{len(quiet)} more setting(s) without a warning"
                                          + (f", {by_wrapper} set by ncclscope run" if by_wrapper else "")),
                             table(quiet, ["name", "value", "source"])], className="settings"))
    return out


def handle_upload(rs: RunStore, filenames: list[str] | None, contents: list[str] | None) -> tuple[Any, Any, Any]:
    """(pending key, message, upload key): the upload is written server-side and parsed in the background."""
    if not contents:
        return no_update, no_update, no_update
    try:
        key = rs.submit_upload(list(filenames or []), list(contents))
    except UploadError as e:
        return no_update, html.Div(str(e), className="banner error", id="upload-error"), None
    return key, html.Div(f"received {len(contents)} file(s); analysing...", className="muted",
                         id="upload-running"), key


def upload_outcome(rs: RunStore, key: str | None) -> Any:
    """The status line of the upload ``key`` once its analysis is over: its verdict and headline, or why it
    failed; ``no_update`` (the 'analysing...' line stays) while it still runs or when there is no upload."""
    if not key:
        return no_update
    st = rs.status(key)
    if st is None:
        return html.Div("that upload is gone (the server restarted?)", className="banner error", id="upload-error")
    if st["state"] == "done":
        return html.Div(f"{st['label']}: analysed in {st['elapsed_s']:.1f} s - {st['message']}", className="muted",
                        id="upload-done")
    if st["state"] == "error":
        return html.Div(f"{st['label']}: not analysed - {st['message']}", className="banner error", id="upload-error")
    return no_update


@callback(Output(ids.OVERVIEW_BODY, "children"), Input(ids.RUN_KEY, "data"))
def _render(key: str | None) -> Any:
    return render(current(), key)


@callback(Output(ids.PENDING_KEY, "data", allow_duplicate=True), Output(ids.UPLOAD_STATUS, "children"),
          Output(ids.UPLOAD_KEY, "data"), Input(ids.UPLOAD, "contents"), State(ids.UPLOAD, "filename"),
          prevent_initial_call=True)
def _upload(contents: list[str] | None, filenames: list[str] | None) -> tuple[Any, Any, Any]:
    return handle_upload(current(), filenames, contents)


# the job poll clears the pending key once the job is done or failed: then the upload's line says how it ended
@callback(Output(ids.UPLOAD_STATUS, "children", allow_duplicate=True), Input(ids.PENDING_KEY, "data"),
          State(ids.UPLOAD_KEY, "data"), prevent_initial_call=True)
def _upload_outcome(_pending: str | None, key: str | None) -> Any:
    return upload_outcome(current(), key)
