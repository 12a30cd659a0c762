"""The releases a program states in its own JSON record of its environment.

A harness or a training script often logs one JSON object per line, its first one the environment it runs in
(``{"rank": 0, "event": "env", "torch": "2.8.0+cu128", "cuda": "12.8", "nccl": "2.27.3", ...}``). The keys are
the program's own, so the ones read are the plain names of the three releases, bare or with ``_version``
(``torch``, ``pytorch``, ``torch_version``; ``cuda``, ``cuda_version``; ``nccl``, ``nccl_version``); a release
is a version string or, for NCCL, the tuple ``torch.cuda.nccl.version()`` returns (``[2, 27, 3]``). A key nested
in an inner object is no statement of the job's own release (a dependency list, a request's payload).
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterator

from .records import NcclVersion, Rec, TorchVersionLine

MAX_LINE = 20_000  # a longer line is a dump of data, not an environment record
TORCH_KEYS = ("torch", "pytorch", "torch_version", "pytorch_version")
CUDA_KEYS = ("cuda", "cuda_version")
NCCL_KEYS = ("nccl", "nccl_version")
GATE = ('"torch', '"pytorch', '"nccl', '"cuda', '"PyTorch', '"NCCL', '"CUDA')
TORCH_RE = re.compile(r"v?(\d{1,2}\.\d{1,3}\.\d{1,3}(?:[a-z]\w{0,10})?(?:\+[\w.]{1,40})?)")
CUDA_RE = re.compile(r"v?(\d{1,2}\.\d{1,2}(?:\.\d{1,3})?)")
NCCL_RE = re.compile(r"v?(\d{1,2}\.\d{1,3}\.\d{1,3})")


def _object(body: str) -> dict[str, object] | None:
    """The JSON object the line is (after any prefix a logger wrote before it), or None."""
    if len(body) > MAX_LINE or not body.rstrip().endswith("}") or not any(g in body for g in GATE):
        return None
    start = body.find("{")
    if start < 0:
        return None
    try:
        obj = json.loads(body[start:])
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def _value(obj: dict[str, object], keys: tuple[str, ...], shape: re.Pattern[str]) -> str | None:
    """The release under the first of ``keys`` (any case) the object holds, in ``shape``, or None."""
    lower = {k.lower(): v for k, v in obj.items() if isinstance(k, str)}
    for key in keys:
        v = lower.get(key)
        if isinstance(v, list) and 2 <= len(v) <= 3 and all(isinstance(x, int) and 0 <= x < 1000 for x in v):
            v = ".".join(str(x) for x in v)
        if isinstance(v, str) and (m := shape.fullmatch(v.strip())):
            return m.group(1)
    return None


def json_releases(body: str) -> tuple[str | None, str | None, str | None] | None:
    """(torch, cuda, nccl) releases a JSON record line states, or None when it states none."""
    obj = _object(body)
    if obj is None:
        return None
    got = (_value(obj, TORCH_KEYS, TORCH_RE), _value(obj, CUDA_KEYS, CUDA_RE), _value(obj, NCCL_KEYS, NCCL_RE))
    return got if any(got) else None


def json_record_facts(file: str, lineno: int, text: str, body: str) -> Iterator[Rec]:
    """The torch release (as a printed version line) and the NCCL release with its CUDA release (as NCCL's own
    version line would state them, of no process) a JSON environment record states."""
    got = json_releases(body)
    if got is None:
        return
    torch, cuda, nccl = got
    if torch is not None:
        yield TorchVersionLine(file, lineno, text, None, None, None, None, torch, None)
    if nccl is not None:
        yield NcclVersion(file, lineno, text, "", 0, 0, None, nccl, cuda)
