"""The hook's record types as plain dicts (one JSON object a line), and stack formatting.

Pure functions, standard library only. Field names are read by ``analyzer/sources/hook_jsonl.py``
and ``analyzer/build.py``:

- ``start``: t, rank, world, local_rank, host, pid, backend, torch, nccl, cuda, env
- ``coll``: t, rank, pg, seq, op, numel, dtype, bytes, where (+ ``p2p`` for send/recv on NCCL)
- ``done``: t, rank, pg, seq, dur_ms (+ ``how``: ``work`` | ``sync`` | ``fr`` | ``order``)
- ``hb``: t, rank, step, pgs {pg: {enq, start, done}}, dropped (+ ``sampled_out``: per-collective
  records left out above the rate budget, see tracer)
- ``stack``: t, rank, reason (stall | request | exit), where, frames [{file, line, func, code}]
- ``fr``: t, rank, path (a Flight Recorder pickle written on request), request_id
- ``exit``: t, rank, code; ``error``: t, rank, message (the hook's own trouble)

``coll`` and ``done`` are the per-collective records: the tracer writes them through a
%-format made once per call site (``coll_format``, ``done_format``), so a collective costs one
``%`` on the writer thread, not a dict and a ``json.dumps``; the line parses to what ``coll`` /
``done`` return.
"""
from __future__ import annotations

import ast
import json
import linecache
import os
import re
import sys
import sysconfig
import time
from types import FrameType
from typing import Any

Record = dict[str, Any]
MAX_FRAMES = 64
_CALL_RE = re.compile(r"([A-Za-z_][\w.]*)\s*\(")


def now() -> float:
    return round(time.time(), 6)


def start(rank: int, world: int, local_rank: int | None, host: str, pid: int, backend: str,
          torch_version: str, nccl: str | None, cuda: str | None, env: dict[str, str]) -> Record:
    return {"type": "start", "t": now(), "rank": rank, "world": world, "local_rank": local_rank, "host": host,
            "pid": pid, "backend": backend, "torch": torch_version, "nccl": nccl, "cuda": cuda, "env": env}


def coll(rank: int, pg: str, seq: int, op: str, numel: int | None, dtype: str | None, nbytes: int | None,
         where: str | None, t: float, p2p: bool = False) -> Record:
    rec: Record = {"type": "coll", "t": t, "rank": rank, "pg": pg, "seq": seq, "op": op, "numel": numel,
                   "dtype": dtype, "bytes": nbytes, "where": where}
    if p2p:
        rec["p2p"] = True
    return rec


def done(rank: int, pg: str, seq: int, dur_ms: float | None, how: str, t: float | None = None) -> Record:
    return {"type": "done", "t": t if t is not None else now(), "rank": rank, "pg": pg, "seq": seq,
            "dur_ms": None if dur_ms is None else round(dur_ms, 3), "how": how}


def _lit(value: Any) -> str:
    """A JSON literal, safe inside a %-format."""
    return json.dumps(value).replace("%", "%%")


def coll_format(rank: int, pg: str, op: str, dtype: str | None, where: str | None, p2p: bool, sized: bool) -> str:
    """The line of a ``coll`` record as a %-format of (t, seq, numel, bytes), or (t, seq) when not ``sized``."""
    tail = ',"p2p":true}\n' if p2p else '}\n'
    size = f'"numel":%d,"dtype":{_lit(dtype)},"bytes":%d,' if sized else '"numel":null,"dtype":null,"bytes":null,'
    return (f'{{"type":"coll","t":%.6f,"rank":{rank},"pg":{_lit(pg)},"seq":%d,"op":{_lit(op)},{size}'
            f'"where":{_lit(where)}{tail}')


def done_format(rank: int, pg: str, how: str) -> str:
    """The line of a ``done`` record as a %-format of (t, seq, dur_ms)."""
    return f'{{"type":"done","t":%.6f,"rank":{rank},"pg":{_lit(pg)},"seq":%d,"dur_ms":%.3f,"how":{_lit(how)}}}\n'


def heartbeat(rank: int, step: int | None, pgs: dict[str, dict[str, int | None]], dropped: int,
              sampled_out: int = 0, untraced: int = 0) -> Record:
    rec: Record = {"type": "hb", "t": now(), "rank": rank, "step": step, "pgs": pgs, "dropped": dropped}
    if sampled_out:
        rec["sampled_out"] = sampled_out
    if untraced:
        rec["untraced"] = untraced  # collectives issued while the per-call budget had the wrappers off
    return rec


def stack(rank: int, reason: str, where: str | None, frames: list[dict[str, Any]], **extra: Any) -> Record:
    rec: Record = {"type": "stack", "t": now(), "rank": rank, "reason": reason, "where": where, "frames": frames}
    rec.update(extra)
    return rec


def fr(rank: int, path: str, request_id: Any) -> Record:
    return {"type": "fr", "t": now(), "rank": rank, "path": path, "request_id": request_id}


def exit_(rank: int, code: int | None, exception: str | None = None) -> Record:
    rec: Record = {"type": "exit", "t": now(), "rank": rank, "code": code}
    if exception:
        rec["exception"] = exception[:500]
    return rec


def error(rank: int, where: str, message: str) -> Record:
    return {"type": "error", "t": now(), "rank": rank, "where": where, "message": message[:500]}


# --- stacks --------------------------------------------------------------------------------------

def _library_roots() -> tuple[str, ...]:
    roots: list[str] = []
    for key in ("stdlib", "platstdlib"):
        try:
            roots.append(os.path.realpath(sysconfig.get_paths()[key]) + os.sep)
        except (KeyError, OSError):
            pass
    here = os.path.dirname(os.path.realpath(__file__)) + os.sep
    roots.append(here)
    torch_mod = sys.modules.get("torch")
    torch_file = getattr(torch_mod, "__file__", None)
    if torch_file:
        roots.append(os.path.dirname(os.path.realpath(torch_file)) + os.sep)
    return tuple(roots)


_ROOTS: tuple[str, ...] | None = None
_REAL: dict[str, str] = {}


def is_library(filename: str) -> bool:
    """True for frames of the standard library, torch and this hook (not where a user looks first)."""
    global _ROOTS
    if _ROOTS is None or (len(_ROOTS) < 4 and "torch" in sys.modules):
        _ROOTS = _library_roots()
    if filename.startswith("<"):
        return not filename.startswith("<stdin")
    real = _REAL.get(filename)
    if real is None:
        real = os.path.realpath(filename)
        if len(_REAL) < 4096:
            _REAL[filename] = real
    return real.startswith(_ROOTS)


def frames_of(frame: FrameType | None, limit: int = MAX_FRAMES) -> list[dict[str, Any]]:
    """Innermost first: [{file, line, func, code}]."""
    out: list[dict[str, Any]] = []
    while frame is not None and len(out) < limit:
        code = frame.f_code
        lineno = frame.f_lineno or 0
        out.append({"file": code.co_filename, "line": lineno, "func": code.co_name,
                    "code": linecache.getline(code.co_filename, lineno).strip()[:200]})
        frame = frame.f_back
    return out


def trim(frames: list[dict[str, Any]], limit: int = MAX_FRAMES) -> list[dict[str, Any]]:
    """At most ``limit`` frames: the innermost ones and the outermost 16 (the user's entry point)."""
    if len(frames) <= limit:
        return frames
    return frames[: limit - 16] + frames[-16:]


def called_name(code_line: str) -> str | None:
    """``x = time.sleep(5)`` -> ``time.sleep``: the outermost call on a source line."""
    text = code_line.strip()
    if not text:
        return None
    try:
        tree = ast.parse(text)
    except SyntaxError:
        m = _CALL_RE.search(text)
        return m.group(1) if m else None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, (ast.Name, ast.Attribute)):
                try:
                    return ast.unparse(func)[:80]
                except Exception:  # noqa: BLE001 - cosmetic only
                    return None
    return None


def where_of(frames: list[dict[str, Any]]) -> str | None:
    """``train.py:88 in main (time.sleep)``: the innermost frame outside torch, the stdlib and the hook."""
    for i, f in enumerate(frames):
        if is_library(str(f["file"])):
            continue
        callee = called_name(str(f.get("code") or ""))
        if callee is None and i > 0:
            callee = str(frames[i - 1]["func"])
        text = f"{os.path.basename(str(f['file']))}:{f['line']} in {f['func']}"
        return f"{text} ({callee})" if callee else text
    if frames:
        f = frames[0]
        return f"{os.path.basename(str(f['file']))}:{f['line']} in {f['func']}"
    return None


# id(code) -> (code, library or not); keyed by id because a code object's own hash is computed
# from its contents at every lookup; the code object is kept, so its id is not reused (bounded)
_LIB_CODE: dict[int, tuple[Any, bool]] = {}


def is_library_code(code: Any) -> bool:
    """``is_library`` of a code object's file, remembered per code object (bounded)."""
    hit = _LIB_CODE.get(id(code))
    if hit is not None and hit[0] is code:
        return hit[1]
    lib = is_library(code.co_filename)
    if len(_LIB_CODE) < 8192:
        _LIB_CODE[id(code)] = (code, lib)
    return lib


def call_site(frame: FrameType | None) -> tuple[int, int] | None:
    """(id of the code, instruction offset) of the innermost frame outside torch, the stdlib and the hook, from ``frame`` out:
    a few attribute reads and dict lookups per frame, no path or source work (``site_text`` does that)."""
    n = 0
    while frame is not None and n < 40:
        code = frame.f_code
        hit = _LIB_CODE.get(id(code))
        lib = hit[1] if hit is not None and hit[0] is code else is_library_code(code)
        if not lib:
            # the instruction offset, not f_lineno: that one decodes the line table on every read
            return id(code), frame.f_lasti
        frame = frame.f_back
        n += 1
    return None


def site_text(site: tuple[int, int] | None) -> str | None:
    """``train.py:88 in main``: what ``caller_where`` returns, from a ``call_site``."""
    if site is None:
        return None
    hit = _LIB_CODE.get(site[0])
    if hit is None:  # the cache was full: no name to give
        return None
    code = hit[0]
    return f"{os.path.basename(code.co_filename)}:{line_of(code, site[1])} in {code.co_name}"


def line_of(code: Any, lasti: int) -> int:
    """The source line of the instruction at offset ``lasti`` (what ``f_lineno`` says there)."""
    try:
        for start, end, line in code.co_lines():
            if start <= lasti < end:
                return int(line) if line is not None else int(code.co_firstlineno)
    except (AttributeError, TypeError):
        pass
    return int(code.co_firstlineno)


def caller_where(depth: int = 2) -> str | None:
    """Where user code called a collective: the innermost non-library frame, cheap (no source read)."""
    try:
        frame: FrameType | None = sys._getframe(depth)
    except ValueError:
        return None
    n = 0
    while frame is not None and n < 40:
        fn = frame.f_code.co_filename
        if not is_library(fn):
            return f"{os.path.basename(fn)}:{frame.f_lineno} in {frame.f_code.co_name}"
        frame = frame.f_back
        n += 1
    return None
