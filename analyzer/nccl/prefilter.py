"""Literals a regular expression cannot match without: a cheap substring test before the search.

``required_literals`` reads a pattern's source conservatively (groups, classes and quantified
characters end a literal), so a text that holds none of an alternative's literals cannot match it.
"""
from __future__ import annotations

_META = set("()[]{}|.^$*+?\\")
_ESCAPED = set(".()[]{}|^$*+?\\/-:'\"<>=,#&~ ")
MIN_LITERAL = 3


def required_literals(pattern: str) -> tuple[str, ...]:
    """One lower-case literal per top-level alternative that every match of it contains; () when some
    alternative has none of at least MIN_LITERAL characters (the entry is then always searched).
    Conservative: groups and classes end a literal, and a quantified character is dropped."""
    out: list[str] = []
    for branch in _branches(pattern):
        best, run, i = "", "", 0
        while i < len(branch):
            c = branch[i]
            if c == "\\" and i + 1 < len(branch) and branch[i + 1] in _ESCAPED:
                run, i = run + branch[i + 1], i + 2
            elif c in "?*{+":  # the character before a quantifier is optional (or repeats): drop it
                best, run = max(best, run[:-1], key=len), ""
                i = _skip_quantifier(branch, i)
            elif c in _META:  # a group, class, escape like \\d, or '.', with any quantifier after it
                best, run = max(best, run, key=len), ""
                i = _skip_quantifier(branch, _skip_group(branch, i))
            else:
                run, i = run + c, i + 1
        best = max(best, run, key=len)
        if len(best) < MIN_LITERAL:
            return ()
        out.append(best.lower())
    return tuple(out)


def _branches(pattern: str) -> list[str]:
    """The top-level alternatives of a pattern."""
    parts, depth, cur, i = [], 0, "", 0
    in_class = False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            cur, i = cur + pattern[i:i + 2], i + 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            parts.append(cur)
            cur, i = "", i + 1
            continue
        cur, i = cur + c, i + 1
    return parts + [cur]


def _skip_group(p: str, i: int) -> int:
    """Past a group or class starting at p[i]; past one character for any other meta character."""
    if p[i] not in "([":
        return i + 2 if p[i] == "\\" else i + 1
    close, depth, j = ")" if p[i] == "(" else "]", 0, i
    while j < len(p):
        if p[j] == "\\":
            j += 2
            continue
        if p[i] == "(" and p[j] == "(":
            depth += 1
        elif p[j] == close:
            depth -= 1 if p[i] == "(" else 1
            if depth <= 0:
                return j + 1
        j += 1
    return j


def _skip_quantifier(p: str, i: int) -> int:
    if i < len(p) and p[i] == "{":
        j = p.find("}", i)
        i = j + 1 if j >= 0 else len(p)
    elif i < len(p) and p[i] in "?*+":
        i += 1
    if i < len(p) and p[i] in "?+":  # lazy / possessive
        i += 1
    return i
