"""The rich consoles the commands print on: a terminal's width on a terminal, full lines anywhere else.

rich wraps every line at 80 columns when its output is not a terminal (a pipe, a file, ``tee``), so a
report piped into ``grep`` or kept by a CI job had its headline, fix hints and evidence lines cut in
pieces. Off a terminal a console made here never soft-wraps and is ``PIPE_WIDTH`` wide, so what the
report shortens for its own reasons (evidence at 200 characters, ``text_fit``) is all that is cut; a
``COLUMNS`` the user set still wins. Nothing that fills the console's width (a panel, a rule) may be
printed on one: it would be ``PIPE_WIDTH`` wide. The live monitor's alert boxes are printed on a
``box_console``, rich's own (80 columns off a terminal). rich is imported when a console is made, never
at module load.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

PIPE_WIDTH = 100_000  # no width in practice: longer than any line the commands print


def full_line_console(stderr: bool = False, **kwargs: Any) -> Console:
    """A rich Console on stdout (``stderr``: on stderr): as rich makes it on a terminal; elsewhere, lines
    are never wrapped (soft wrap, ``PIPE_WIDTH`` columns) unless the user set ``COLUMNS``."""
    from rich.console import Console

    console = Console(stderr=stderr, **kwargs)
    if not console.is_terminal and not os.environ.get("COLUMNS", "").strip().isdigit():
        console.soft_wrap = True
        console.width = PIPE_WIDTH
    return console


def box_console(stderr: bool = False, **kwargs: Any) -> Console:
    """A rich Console as rich makes it, for output drawn in boxes that fill its width (alert panels)."""
    from rich.console import Console

    return Console(stderr=stderr, **kwargs)
