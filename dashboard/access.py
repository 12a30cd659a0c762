"""The dashboard's access token: one secret per start, asked on every route of every bind.

As notebook servers do: the URL printed at start carries ``?token=...``; a page opened with it is
redirected to itself without it and a cookie is set (named after the port the browser used, so two
dashboards on one host keep their own); scripts send ``Authorization: Bearer <token>`` or ``?token=``
(``/metrics`` for Prometheus). Every comparison is constant-time (``hmac.compare_digest``).

``carries_token`` reads the request's raw parts (query string, Cookie, Authorization, Host), so the
same check runs in the HTTP server before a request body is read (``server.py``) and in Flask
before any route (``install_token_check``).
"""
from __future__ import annotations

import hmac
import secrets
from collections.abc import Mapping
from http.cookies import CookieError, SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, urlencode

from flask import Flask, Response, redirect, request

TOKEN_COOKIE = "ncclscope_token"  # the cookie's name, followed by _PORT when the Host header names a port
TOKEN_ENV = "NCCLSCOPE_DASHBOARD_TOKEN"  # how `run --dashboard` hands the token to `serve` (never on argv)
MIN_TOKEN_CHARS = 16
NO_REDIRECT_PATHS = frozenset({"/metrics"})  # scrapers follow no redirect and keep no cookie: ?token= is taken as is
REFUSED = ("ncclscope: this dashboard needs its access token: open the URL printed when it started "
           "(it ends in ?token=...), or send 'Authorization: Bearer <token>'\n")


def new_token() -> str:
    """A fresh secret (32 URL-safe characters, 192 bits)."""
    return secrets.token_urlsafe(24)


def same_token(given: str | None, token: str) -> bool:
    """``given`` equals ``token``, compared in constant time."""
    return given is not None and hmac.compare_digest(given.encode("utf-8", "replace"), token.encode())


def cookie_name(host_header: str) -> str:
    """``ncclscope_token_8050`` for ``127.0.0.1:8050``: cookies ignore ports, so each port has its own name."""
    h = host_header.strip()
    port = h.rsplit(":", 1)[1] if ":" in h and not h.endswith("]") else ""
    return f"{TOKEN_COOKIE}_{port}" if port.isdigit() else TOKEN_COOKIE


def bearer(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, else None."""
    scheme, _, value = (authorization or "").strip().partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


def cookie_value(cookie_header: str | None, name: str) -> str | None:
    if not cookie_header:
        return None
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(cookie_header)
    except CookieError:
        return None
    morsel = jar.get(name)
    return morsel.value if morsel is not None else None


def query_token(query: str) -> str | None:
    for k, v in parse_qsl(query or "", keep_blank_values=True):
        if k == "token":
            return v
    return None


def carries_token(token: str, query: str, cookie_header: str | None, authorization: str | None,
                  host_header: str) -> bool:
    """Whether a request shows ``token`` in its query, its Authorization header or its port's cookie."""
    return (same_token(query_token(query), token) or same_token(bearer(authorization), token)
            or same_token(cookie_value(cookie_header, cookie_name(host_header)), token))


def headers_carry_token(token: str, headers: Mapping[str, str], query: str) -> bool:
    """``carries_token`` over headers keyed as the HTTP server keys them (``COOKIE``, ``AUTHORIZATION``, ``HOST``)."""
    return carries_token(token, query, headers.get("COOKIE"), headers.get("AUTHORIZATION"), headers.get("HOST", ""))


def install_token_check(app: Flask, token: str) -> None:
    """Every request must carry ``token``; a page opened with ``?token=`` gets the cookie and the URL without it."""

    @app.before_request
    def _check_token() -> Any:
        query = request.query_string.decode("latin-1")
        host = request.host or ""
        if same_token(query_token(query), token) and request.method == "GET" and request.path not in NO_REDIRECT_PATHS:
            args = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k != "token"]
            resp = redirect(request.path + ("?" + urlencode(args) if args else ""))
            resp.set_cookie(cookie_name(host), token, httponly=True, samesite="Strict")
            resp.headers["Cache-Control"] = "no-store"
            resp.headers["Referrer-Policy"] = "no-referrer"
            return resp
        if carries_token(token, query, request.headers.get("Cookie"), request.headers.get("Authorization"), host):
            return None
        return Response(REFUSED, status=403, mimetype="text/plain")
