"""Where alerts go: ``DIR/alerts.jsonl`` (docs/interfaces.md), the console, a webhook, a command.

An alert is a plain dict: ``ts``, ``time``, ``kind`` (hang | desync | crash | hang_detail |
cleared), ``verdict``, ``culprit_ranks``, ``stuck`` ({pg, seq, op} or null), ``message``, ``where``
({rank: "file:line in func (code)"}), plus extra keys some kinds carry (``stacks``,
``incident``, ``threshold_s``...).

The webhook and the command run on their own thread each, fed by a bounded queue: a slow or
dead endpoint never delays detection. A sink's failure is recorded in ``errors`` (one line
each) and never raised.
"""
from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

from .. import safe_io
from ..alerts_file import AlertKind
from ..text_fit import shorten

QUEUE_MAX = 256


def make_alert(kind: AlertKind, verdict: str, culprit_ranks: list[int] | tuple[int, ...],
               stuck: dict[str, Any] | None, message: str, where: dict[int, str] | None = None,
               ts: float | None = None, **extra: Any) -> dict[str, Any]:
    ts = time.time() if ts is None else ts
    alert: dict[str, Any] = {
        "ts": round(ts, 3),
        "time": datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
        "kind": kind,
        "verdict": verdict,
        "culprit_ranks": sorted(int(r) for r in culprit_ranks),
        "stuck": stuck,
        "message": message,
        "where": {str(r): w for r, w in sorted((where or {}).items())},
    }
    alert.update(extra)
    return alert


def judgement_alert(a: Any, ts: float | None = None) -> dict[str, Any] | None:
    """The one judgement of a run (``result.Analysis``) as an alert: what ``watch --once`` and the end of a
    followed job say; None for a job judged healthy, degraded or unknown (no incident)."""
    d = a.decision
    if d.verdict.value not in ("hang", "desync", "crash", "config_error"):
        return None
    return make_alert(AlertKind(d.verdict.value), d.verdict.value, d.culprit_ranks, d.stuck.to_json() if d.stuck else None,
                      d.headline, dict(a.run.stacks), ts, certainty=d.certainty_json())


def slack_text(alert: dict[str, Any]) -> str:
    lines = [f"*ncclscope {alert.get('kind', 'alert')}*: {alert.get('message', '')}"]
    for r, w in (alert.get("where") or {}).items():
        lines.append(f"rank {r}: {w}")
    return "\n".join(lines)


class FileSink:
    """Appends one JSON object a line; each alert is one write(2) on an O_APPEND descriptor, opened
    with ``safe_io.open_append`` (no link followed, only a regular file of ours)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.errors: list[str] = []

    def emit(self, alert: dict[str, Any]) -> None:
        data = (json.dumps(alert, default=str) + "\n").encode()
        try:  # never through a link planted under the name, never into someone else's file
            safe_io.append(self.path, data)
        except OSError as e:
            self.errors.append(f"cannot append to {self.path}: {e.strerror or e}")

    def close(self) -> None:
        pass


MAX_FRAMES = 4  # frames shown per rank in the hang_detail box (innermost first); the rest in alerts.jsonl
MAX_GROUPS = 8  # places (ranks with the same where and stack) shown in a box


class ConsoleSink:
    """One rich block an alert; after a hang, one line with the next step.

    ``can_kill``: the monitor runs under ``ncclscope run`` (Ctrl-C reaches the job, ``--kill-on-hang``
    applies); ``kill_on_hang``: the job will be ended, announced by ``note`` before it is."""

    COLORS: ClassVar[dict[str, str]] = {"hang": "red", "desync": "magenta", "crash": "red", "hang_detail": "yellow", "cleared": "green"}
    MESSAGE_WIDTH = 600

    def __init__(self, console: Any | None = None, can_kill: bool = False, kill_on_hang: bool = False) -> None:
        if console is None:
            from rich.console import Console

            console = Console(stderr=True, highlight=False)
        self.console = console
        self.can_kill = can_kill
        self.kill_on_hang = kill_on_hang
        self.errors: list[str] = []
        self._told: set[str] = set()  # incidents whose next step was printed

    def body(self, alert: dict[str, Any]) -> list[str]:
        """The box's lines, markup-escaped (everything in an alert may come from the logs)."""
        from ..text_safety import markup as escape

        kind = str(alert.get("kind", "alert"))
        body = [escape(shorten(str(alert.get("message", "")), self.MESSAGE_WIDTH))]
        if alert.get("culprit_ranks"):
            from ..rules.states import fmt_ranks

            body.append(escape(f"culprit rank(s): {fmt_ranks(int(r) for r in alert['culprit_ranks'])}"))
        cert = alert.get("certainty")
        if isinstance(cert, dict) and cert.get("level") not in (None, "confirmed"):  # a claim from partial evidence
            body.append(escape(shorten(f"certainty: {cert.get('level')} ({cert.get('why') or ''})", self.MESSAGE_WIDTH)))
        stacks = alert.get("stacks") if kind == AlertKind.HANG_DETAIL else None
        culprits = {str(r) for r in alert.get("culprit_ranks") or []}
        body += self._rank_lines(stacks if isinstance(stacks, dict) else {}, alert.get("where") or {}, culprits)
        if stacks and alert.get("flight_recorder"):
            body.append(escape("Flight Recorder dumps: " + ", ".join(map(str, alert["flight_recorder"]))))
        return body

    def _rank_lines(self, stacks: dict[str, Any], where: dict[str, Any], culprits: set[str]) -> list[str]:
        """Ranks at the same place with the same stack grouped (``ranks 0-1, 3``), the culprits' first:
        each group's place and its top frames; at most MAX_GROUPS groups (1,024 ranks stay one screen)."""
        from ..rules.states import fmt_ranks
        from ..text_safety import markup as escape

        width = max(40, int(getattr(self.console, "width", 80) or 80) - 12)
        groups: dict[tuple[str, tuple[str, ...]], list[int]] = {}
        for r in sorted(set(stacks) | set(where), key=lambda x: (str(x) not in culprits, len(str(x)), str(x))):
            frames = tuple(str(f) for f in stacks.get(r) or [])
            try:
                groups.setdefault((str(where.get(r) or "?"), frames), []).append(int(r))
            except ValueError:
                continue
        out = []
        for (w, frames), ranks in list(groups.items())[:MAX_GROUPS]:
            label = f"rank{'s' if len(ranks) > 1 else ''} {fmt_ranks(ranks)}"
            out.append(f"  {escape(label)}: {escape(w)}")
            out += [f"      {escape(shorten(f, width))}" for f in frames[:MAX_FRAMES]]
            if len(frames) > MAX_FRAMES:
                out.append(f"      ... {len(frames) - MAX_FRAMES} outer frame(s) in alerts.jsonl")
        rest = [r for ranks in list(groups.values())[MAX_GROUPS:] for r in ranks]
        if rest:
            out.append(escape(f"  ... {len(groups) - MAX_GROUPS} more place(s), ranks {fmt_ranks(rest)}: "
                              "in alerts.jsonl"))
        return out

    def emit(self, alert: dict[str, Any]) -> None:
        from rich.panel import Panel

        from ..text_safety import markup as escape

        kind = str(alert.get("kind", "alert"))
        try:
            self.console.print(Panel("\n".join(self.body(alert)), title=escape(f"ncclscope {kind} {alert.get('time', '')}"),
                                     title_align="left", border_style=self.COLORS.get(kind, "white")))
            line = self._next_step(alert)
            if line:
                self.note(line)
        except Exception as e:  # noqa: BLE001 - a closed terminal must not stop the monitor
            self.errors.append(f"console: {e}")

    def _next_step(self, alert: dict[str, Any]) -> str | None:
        """After the hang_detail (the dumps give the job's own timeout), or after the hang when no
        detail follows; once an incident; only while the job runs (the alert's ``watchdog``)."""
        from .next_step import next_step

        kind = alert.get("kind")
        if kind not in (AlertKind.HANG, AlertKind.HANG_DETAIL) or not alert.get("watchdog"):
            return None  # PyTorch's own timeout (the job is ending), or every rank has exited
        if kind == AlertKind.HANG and alert.get("stacks_requested"):
            return None
        st = alert.get("stuck") or {}
        key = f"{st.get('pg')}#{st.get('seq')}"
        if key in self._told:
            return None
        self._told.add(key)
        return next_step(alert, self.can_kill, self.kill_on_hang)

    def note(self, text: str) -> None:
        """One line under the boxes (the next step, a kill about to happen)."""
        from ..text_safety import text as plain

        try:
            self.console.print(plain(f"ncclscope: {text}", style="bold yellow"), soft_wrap=True)  # the terminal wraps
        except Exception as e:  # noqa: BLE001
            self.errors.append(f"console: {e}")

    def close(self) -> None:
        pass


class _Worker:
    """A daemon thread draining a bounded queue with ``handle``; ``close`` joins it."""

    def __init__(self, name: str, handle: Callable[[dict[str, Any]], None], join_s: float = 5.0) -> None:
        self.q: queue.Queue[dict[str, Any] | None] = queue.Queue(QUEUE_MAX)
        self.handle = handle
        self.join_s = join_s
        self.errors: list[str] = []
        self.dropped = 0
        self.sent = 0
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()

    def emit(self, alert: dict[str, Any]) -> None:
        try:
            self.q.put_nowait(alert)
        except queue.Full:
            self.dropped += 1

    def _run(self) -> None:
        while True:
            item = self.q.get()
            if item is None or self._stop.is_set():
                return
            try:
                self.handle(item)
            except Exception as e:  # noqa: BLE001 - recorded, never raised
                self.errors.append(str(e))

    def close(self) -> None:
        """Deliver what is queued within ``join_s``; then abandon the rest (a dead endpoint must not hang us)."""
        try:
            self.q.put(None, timeout=1)
        except queue.Full:
            self._stop.set()
        self.thread.join(timeout=self.join_s)
        if self.thread.is_alive():
            self._stop.set()
            left = self.q.qsize()
            if left:
                self.errors.append(f"{left} alert(s) not delivered before shutdown")
            try:
                self.q.put_nowait(None)
            except queue.Full:
                pass
            self.thread.join(timeout=self.join_s)


WEBHOOK_SCHEMES = ("http", "https")


class WebhookError(ValueError):
    """A webhook URL that is not http(s) with a host (``file:``, ``data:``, ``ftp:`` would read or send elsewhere)."""


def check_webhook_url(url: str) -> None:
    """Raise WebhookError unless ``url`` is http:// or https:// with a host."""
    try:
        parts = urlsplit(url)
    except ValueError as e:
        raise WebhookError(f"webhook URL not understood: {e}") from None
    if parts.scheme.lower() not in WEBHOOK_SCHEMES or not parts.hostname:
        raise WebhookError(f"webhook URL must be http:// or https:// with a host, not {url[:80]!r}")


class _HttpOnly(urllib.request.HTTPRedirectHandler):
    """Redirects are followed to http(s) only: a 302 to file:// or ftp:// is an error."""

    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str) -> Any:
        check_webhook_url(newurl)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


_OPENER = urllib.request.build_opener(_HttpOnly)


class WebhookSink(_Worker):
    """JSON POST: Slack's ``text`` plus every alert field. Short timeout, bounded retries."""

    def __init__(self, url: str, timeout_s: float = 3.0, retries: int = 3, backoff_s: float = 0.5) -> None:
        check_webhook_url(url)
        self.url = url
        self.timeout_s = timeout_s
        self.retries = retries
        self.backoff_s = backoff_s
        super().__init__("ncclscope-webhook", self._post, join_s=timeout_s + 2)

    def _post(self, alert: dict[str, Any]) -> None:
        body = json.dumps({"text": slack_text(alert), **alert}, default=str).encode()
        last, attempt = "", 0
        for attempt in range(max(1, self.retries)):
            if self._stop.is_set():
                break
            req = urllib.request.Request(self.url, data=body, method="POST",
                                         headers={"Content-Type": "application/json",
                                                  "User-Agent": "ncclscope"})
            try:
                with _OPENER.open(req, timeout=self.timeout_s) as resp:
                    resp.read(1 << 16)
                    if 200 <= resp.status < 300:
                        self.sent += 1
                        return
                    last = f"HTTP {resp.status}"
            except urllib.error.HTTPError as e:
                last = f"HTTP {e.code}"
                if 400 <= e.code < 500 and e.code != 429:
                    break  # the request itself is wrong: retrying will not help
            except (OSError, ValueError) as e:
                last = str(getattr(e, "reason", e))
            self._stop.wait(self.backoff_s * (2 ** attempt))
        self.errors.append(f"webhook {self.url}: {last} after {attempt + 1} attempt(s)")


class CommandSink(_Worker):
    """Runs a shell command with the alert JSON on stdin (its own session; killed after ``timeout_s``)."""

    def __init__(self, command: str, timeout_s: float = 30.0) -> None:
        self.command = command
        self.timeout_s = timeout_s
        super().__init__("ncclscope-alert-command", self._run_command, join_s=timeout_s + 2)

    def _run_command(self, alert: dict[str, Any]) -> None:
        env = dict(os.environ, NCCLSCOPE_ALERT_KIND=str(alert.get("kind", "")))
        try:
            p = subprocess.run(self.command, shell=True, input=json.dumps(alert, default=str).encode(), check=False,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=self.timeout_s,
                               start_new_session=True, env=env)
        except subprocess.TimeoutExpired:
            self.errors.append(f"alert command timed out after {self.timeout_s:g} s")
            return
        except OSError as e:
            self.errors.append(f"alert command: {e}")
            return
        self.sent += 1
        if p.returncode != 0:
            tail = p.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] if p.stderr else []
            self.errors.append(f"alert command exited {p.returncode}" + (f": {tail[0]}" if tail else ""))


class Sinks:
    def __init__(self, sinks: list[Any]) -> None:
        self.sinks = sinks

    def emit(self, alert: dict[str, Any]) -> None:
        for s in self.sinks:
            try:
                s.emit(alert)
            except Exception as e:  # noqa: BLE001
                s.errors.append(str(e))

    def errors(self) -> list[str]:
        return [e for s in self.sinks for e in s.errors]

    def close(self) -> None:
        for s in self.sinks:
            try:
                s.close()
            except Exception:  # noqa: BLE001, S110
                pass
