"""The pipeline: paths -> parsed files -> run model -> findings -> decision."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .model import Finding, Run

if TYPE_CHECKING:
    from .verdict import Decision

# build, ingest and the detectors (numpy, pandas) are imported where they are used: a re-open of a
# cached analysis needs none of them


@dataclass
class Analysis:
    run: Run
    findings: list[Finding]
    decision: Decision
    # with analyze_paths(defer_store=True): writes the cache entry; call it once the report is out
    pending_store: Callable[[], None] | None = field(default=None, repr=False, compare=False)

    def finish(self) -> None:
        """Write what was deferred (the cache entry), once."""
        store, self.pending_store = self.pending_store, None
        if store is not None:
            store()


def analyze_run(run: Run) -> Analysis:
    from .detectors import run_detectors
    from .verdict import decide

    findings = run_detectors(run)
    order = {"critical": 0, "error": 1, "warning": 2, "info": 3}
    findings.sort(key=lambda f: order[f.severity.value])
    return Analysis(run, findings, decide(run, findings))


def analyze_paths(paths: list[Path], progress: Callable[[int, int], None] | None = None,
                  cache: bool = True, defer_store: bool = False,
                  note: Callable[[str], None] | None = None) -> Analysis:
    """``cache``: reuse the parsed run stored by an earlier call on the same, unchanged files, and its
    findings and decision while the detectors' code is unchanged (cache.py). ``defer_store``: leave
    writing a new entry to ``Analysis.finish()``, so that a caller can show the verdict first. ``note``:
    told of one-off delays (ingest)."""
    if cache:
        from . import cache as run_cache

        entry = run_cache.open_entry(paths, want_analysis=True)
        if entry is not None and entry.findings is not None:
            return Analysis(entry.run, entry.findings, entry.decision)
    from .build import build_run
    from .ingest import ingest

    if not cache:
        return analyze_run(build_run(ingest(paths, progress=progress, note=note), release=True))
    if entry is not None:
        res = analyze_run(entry.run)
        run_cache.store_analysis(entry.folder, res.findings, res.decision, _json_line(res))
        return res
    run = build_run(ingest(paths, progress=progress, note=note), release=True)
    res = analyze_run(run)

    def store() -> None:
        run_cache.store(paths, run, res.findings, res.decision, _json_line(res))

    res.pending_store = store
    if not defer_store:
        res.finish()
    return res


def _json_line(res: Analysis) -> str | None:
    """The ``--json`` line to keep with a cache entry; None (no line kept) if it cannot be made."""
    from .report import json_text

    try:
        return json_text(res)
    except Exception:  # noqa: BLE001 - a report that cannot be cached is only not cached
        return None
