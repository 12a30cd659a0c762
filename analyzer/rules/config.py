"""A setting that broke the job: the one rule ``analyze``'s config detector and the live monitor share.

A failure text (an NCCL WARN, an exception, PyTorch's quote of NCCL's last error) that the knowledge base
calls a configuration failure (``kind = "config"``) and that names the setting behind it (``NCCL_ALGO was
set to Tree``, or a setting the job is known to have set) is a config mistake; the ranks whose texts match
the same entry are the ones it broke. Offline the detector turns it into the ``config`` finding that makes
the verdict ``config_error``; live the monitor alerts ``config_error`` instead of the crash that followed.
"""
from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from ..nccl.failures import Entry, EntryKind, classify

SETTING_IN_TEXT_RE = re.compile(r"\b(NCCL_[A-Z0-9_]+|TORCH_[A-Z0-9_]+)\b")
WAS_SET_RE = re.compile(r"\b(NCCL_[A-Z0-9_]+) was set\b")


@dataclass(frozen=True, slots=True)
class ConfigMistake:
    entry: Entry
    settings: tuple[str, ...]  # the settings named, first-named first
    ranks: tuple[int, ...]  # the ranks whose failure texts match the same entry
    index: int  # which of the texts named it (its evidence)


def config_mistake(texts: Sequence[tuple[int | None, str]], known: Collection[str] = ()) -> ConfigMistake | None:
    """The first of ``texts`` ((rank or None, text), in the order they were written) that shows a config
    mistake; ``known``: settings the job is known to have set (a text naming one of them counts)."""
    for i, (_, text) in enumerate(texts):
        k = classify(text)
        if k is None or k.kind != EntryKind.CONFIG:
            continue
        names = WAS_SET_RE.findall(text) or [n for n in SETTING_IN_TEXT_RE.findall(text)
                                            if n in known and n != "NCCL_DEBUG"]
        if not names:
            continue
        ranks = sorted({r for r, t in texts if r is not None and classify(t) is k})
        return ConfigMistake(k, tuple(dict.fromkeys(names)), tuple(ranks), i)
    return None
