"""Text from logs made safe for a terminal and for rich: no control characters, no markup.

Log lines are written by anyone who can write to a run folder, so their text may hold ESC / CSI /
OSC sequences (recolour the terminal, set its title, plant a hyperlink, rewrite what was printed
before), bare carriage returns and backspaces, C1 controls, and square brackets that rich would
read as markup (gloo's ``[/__w/pytorch/.../pair.cc:534]`` is a closing tag to rich and raises
``MarkupError``). ``clean`` replaces every control character by a visible ``\\xNN`` escape;
``markup`` also escapes rich's markup. Rendering code builds ``rich.text.Text`` from log text
(``text``) so nothing in it is ever parsed.
"""
from __future__ import annotations

import re
from typing import Any

# C0 (tab kept), DEL, C1, and the bidirectional overrides / isolates that reorder what is shown
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_CONTROL_NO_NL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _visible(m: re.Match[str]) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def clean(s: Any) -> str:
    """``s`` as one line of plain text: every control character shown as ``\\xNN`` (newlines too)."""
    text = s if isinstance(s, str) else str(s)
    return _CONTROL.sub(_visible, text)


def clean_escaped(s: Any) -> str:
    """``clean`` for a format that escapes the backslash itself (Prometheus label values): every control
    character but the newline as ``\\xNN`` (an escaped backslash, then ``xNN``), to be read back as
    that printable text; the caller escapes the backslashes, quotes and newlines of ``s`` first."""
    text = s if isinstance(s, str) else str(s)
    return _CONTROL_NO_NL.sub(lambda m: "\\" + _visible(m), text)


def clean_block(s: Any) -> str:
    """Like ``clean`` but keeps line breaks (for multi-line messages)."""
    text = s if isinstance(s, str) else str(s)
    return "\n".join(clean(line) for line in text.split("\n"))


def markup(s: Any) -> str:
    """``clean(s)`` with rich markup escaped: safe inside a string that rich parses as markup."""
    from rich.markup import escape

    return escape(clean(s))


def text(s: Any, style: str = "") -> Any:
    """A ``rich.text.Text`` of ``clean(s)``: printed as is, never parsed as markup or highlighted."""
    from rich.text import Text

    return Text(clean(s), style=style)
