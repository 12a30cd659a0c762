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
    parts: list[str] = []
    depth, start, i = 0, 0, 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            i = _class_end(pattern, i)
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            parts.append(pattern[start:i])
            start = i + 1
        i += 1
    return parts + [pattern[start:]]


def _skip_group(p: str, i: int) -> int:
    """Past the group or class starting at p[i] (classes inside a group are skipped whole, so a ')'
    in one does not close the group); past one character, or an escape, for other meta characters."""
    if p[i] == "[":
        return _class_end(p, i)
    if p[i] != "(":
        return i + 2 if p[i] == "\\" else i + 1
    depth, j = 0, i
    while j < len(p):
        c = p[j]
        if c == "\\":
            j += 2
            continue
        if c == "[":
            j = _class_end(p, j)
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    return j


def _class_end(p: str, i: int) -> int:
    """Past the character class starting at p[i] == '['; a ']' first in it is a literal."""
    j = i + 1
    if j < len(p) and p[j] == "^":
        j += 1
    if j < len(p) and p[j] == "]":
        j += 1
    while j < len(p):
        if p[j] == "\\":
            j += 2
            continue
        if p[j] == "]":
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
