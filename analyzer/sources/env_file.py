"""``KEY=VALUE`` environment listings (``env.txt``, the wrapper's ``env.json``) and ``exit.txt``."""
from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from .records import EnvSetting, ExitCode, Rec

ENV_LINE_RE = re.compile(r"^(?:export )?(?P<k>[A-Z][A-Z0-9_]{0,80})=(?P<v>.*)$")
EXIT_RE = re.compile(r"^exit(?:_?code)?[=:]\s*(?P<c>-?\d+)\s*$")
INTERESTING = ("NCCL_", "TORCH_", "CUDA_", "MASTER_", "WORLD_SIZE", "RANK", "LOCAL_", "OMP_", "GLOO_")


def parse_env_lines(lines: Iterable[tuple[int, str]], file: str) -> Iterator[Rec]:
    for lineno, text in lines:
        text = text.strip()
        e = EXIT_RE.match(text)
        if e:
            yield ExitCode(file, lineno, text, int(e.group("c")))
            continue
        m = ENV_LINE_RE.match(text)
        if m and m.group("k").startswith(INTERESTING):
            yield EnvSetting(file, lineno, text, m.group("k"), m.group("v").strip())
