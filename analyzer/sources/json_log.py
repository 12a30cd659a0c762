"""A log written as JSON records, one per line (a server's structured logging: ``{"timestamp": ..., "level": "ERROR",
"fields": {"message": "..."}, ...}``; Docker's and Kubernetes' ``{"log": "...", "stream": "stderr"}``; Python
loggers' ``{"msg": ...}``): the lines its messages hold, read as a console's.

Each record's message (``fields.message``, ``message``, ``msg`` or ``log``, the first that is a string) gives its
lines, each at the record's line number: a child process's whole stderr a launcher logs as one record (its watchdog
lines, a traceback) is read line by line. A line that is no record (the launcher's last ``Error: ...``) is read as it
is. A record a terminal wrapped in two (the JSON cut in the middle of its message) is read on from the cut: the
next line is the message's rest, up to its closing quote, the piece before the cut glued to it.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

MESSAGE_KEYS = ('"message":', '"msg":', '"log":')
MAX_RECORD = 1 << 20  # a longer line is read as it is, not decoded
MAX_HELD = 1 << 16  # a cut record's message carried over lines at most this long: then given as it is and dropped
ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "/": "/", "b": "", "f": ""}


def looks_like_json_log(first_lines: Iterable[str]) -> bool:
    """The file's first records are JSON objects holding a message (not the hook's records, which hold a ``type``: its
    error records carry a ``message`` too)."""
    seen = 0
    for text in first_lines:
        t = text.strip()
        if not t:
            continue
        if not t.startswith("{") or not any(k in t for k in MESSAGE_KEYS) or '"type":' in t:
            return False
        seen += 1
        if seen >= 3:
            break
    return seen > 0


def message_of(obj: dict[str, object]) -> str | None:
    """The record's message: ``fields.message`` (Rust's tracing), else ``message``, ``msg`` or ``log``."""
    fields = obj.get("fields")
    if isinstance(fields, dict) and isinstance(fields.get("message"), str):
        return str(fields["message"])
    for key in ("message", "msg", "log"):
        if isinstance(obj.get(key), str):
            return str(obj[key])
    return None


def _decode(text: str, start: int) -> tuple[str, bool]:
    """A JSON string's characters from ``start`` (after its opening quote) to its closing quote, escapes decoded, and
    whether the quote came (False: the line ends inside the string)."""
    out: list[str] = []
    i, n = start, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            return "".join(out), True
        if c == "\\" and i + 1 < n:
            e = text[i + 1]
            if e == "u" and i + 5 < n:
                try:
                    out.append(chr(int(text[i + 2:i + 6], 16)))
                except ValueError:
                    pass
                i += 6
                continue
            out.append(ESCAPES.get(e, e))
            i += 2
            continue
        if c != "\n":
            out.append(c)
        i += 1
    return "".join(out), False


def _cut_message(text: str) -> tuple[str, bool] | None:
    """The message of a record that is no whole JSON (cut by a wrap): from its message key's opening quote on."""
    for key in MESSAGE_KEYS:
        k = text.find(key)
        if k >= 0:
            q = text.find('"', k + len(key))
            if q >= 0 and not text[k + len(key):q].strip():
                return _decode(text, q + 1)
    return None


def message_lines(lines: Iterable[tuple[int, str]]) -> Iterator[tuple[int, str]]:
    """(line number, text) of each line the records' messages hold, in order; lines that are no record as they are."""
    held: str | None = None  # the piece of a cut record's message before the cut, awaiting the rest
    last = 0
    for lineno, text in lines:
        last = lineno
        if held is not None:
            rest, closed = _decode(text, 0)
            pieces = (held + rest).split("\n")
            held = None if closed else pieces.pop()
            if held is not None and len(held) > MAX_HELD:  # no closing quote for long: no record being continued
                pieces.append(held)
                held = None
            yield from ((lineno, p + "\n") for p in pieces)
            continue
        t = text.strip()
        if not t.startswith("{") or len(t) > MAX_RECORD:
            yield lineno, text
            continue
        try:
            obj = json.loads(t)
        except (ValueError, RecursionError):
            cut = _cut_message(t)
            if cut is None:
                yield lineno, text
                continue
            msg, closed = cut
            pieces = msg.split("\n")
            held = None if closed else pieces.pop()
            yield from ((lineno, p + "\n") for p in pieces)
            continue
        said = message_of(obj) if isinstance(obj, dict) else None
        if said is None:
            yield lineno, text
            continue
        yield from ((lineno, p + "\n") for p in said.split("\n"))
    if held:
        yield last, held + "\n"
