"""The memory gate in front of uploads: a big request reserves its share of the memory budget before Flask
parses its body, and gives it back once answered; one that does not fit is refused before it is parsed.

The refusal must be seen on the page: a plain HTTP error would only reach the browser's console. The
request's first bytes name the callback (``{"output":"..."`` comes first in what dash-renderer sends), so
a refused upload is answered as its own callback would answer, with the message in the upload's status line.
"""
from __future__ import annotations

import json
import re
from typing import Any

from dash import Dash, html
from flask import Response, g, request
from plotly.utils import PlotlyJSONEncoder

from . import ids, uploads
from .data import RunStore

PEEK_BYTES = 4096
UPDATE_PATH = "/_dash-update-component"


def install_upload_gate(app: Dash, rs: RunStore) -> None:
    server = app.server

    @server.before_request
    def _reserve_memory() -> Any:
        n = request.content_length or 0
        if request.method != "POST" or n < uploads.GATE_MIN_BYTES:
            return None
        need = n * uploads.DECODE_FACTOR
        if not rs.memory.take(need):
            return refusal(app, rs.memory.refusal(need))
        g.ncclscope_memory = need
        return None

    @server.teardown_request
    def _give_back(_exc: BaseException | None) -> None:
        need = g.pop("ncclscope_memory", 0)
        if need:
            rs.memory.give(need)


def upload_output(app: Dash) -> str | None:
    """The output key of the callback the upload's files arrive through (its input: the upload's contents)."""
    for key, spec in app.callback_map.items():
        if any(i.get("id") == ids.UPLOAD and i.get("property") == "contents" for i in spec.get("inputs", [])):
            return str(key)
    return None


def refusal(app: Dash, message: str) -> Response:
    """The upload callback's own answer with ``message`` in the status line, or a plain 503 for any other request."""
    head = request.stream.read(PEEK_BYTES) if request.path == UPDATE_PATH else b""
    output = upload_output(app)
    if output is not None and re.match(rb'\s*\{\s*"output"\s*:\s*' + re.escape(json.dumps(output).encode()), head):
        banner = html.Div(message, className="banner error", id="upload-error")
        body = {"multi": True, "response": {ids.UPLOAD_STATUS: {"children": banner}}}
        return Response(json.dumps(body, cls=PlotlyJSONEncoder), status=200, mimetype="application/json")
    return Response(f"ncclscope: {message}\n", status=503, mimetype="text/plain")
