"""The pipeline: paths -> parsed files -> run model -> findings -> decision."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from .alerts_file import folder_alerts
from .model import Run
from .result import Analysis

# build, ingest and the detectors (numpy, pandas) are imported where they are used: a re-open of a
# cached analysis needs none of them


HEAP_WARM_SHARE = 4  # heap faulted in while the workers parse: a quarter of the input (malloc.warm_heap caps it)


def analyze_run(run: Run, alerts: list[dict[str, Any]] | None = None) -> Analysis:
    """``alerts``: the live monitor's alerts for this run: a hang it confirmed stays the verdict when
    what failed after it is its echo (``verdict.decide``)."""
    from .detectors import run_detectors
    from .verdict import SEVERITY_ORDER, decide, mark_echoes

    findings = run_detectors(run)
    findings.sort(key=lambda f: SEVERITY_ORDER[f.severity])
    d = decide(run, findings, alerts or ())
    return Analysis(run, mark_echoes(findings, d), d)


def analyze_paths(paths: list[Path], progress: Callable[[int, int], None] | None = None,
                  cache: bool = True, defer_store: bool = False,
                  note: Callable[[str], None] | None = None) -> Analysis:
    """``cache``: reuse the parsed run stored by an earlier call on the same, unchanged files, and its
    findings and decision while the detectors' code is unchanged (cache.py). ``defer_store``: leave
    writing a new entry to ``Analysis.finish()``, so that a caller can show the verdict first. ``note``:
    told of one-off delays (ingest)."""
    alerts = folder_alerts(paths)
    if cache:
        from . import cache as run_cache

        entry = run_cache.open_entry(paths, want_analysis=True)
        if entry is not None and entry.findings is not None:
            if not alerts:
                return Analysis(entry.run, entry.findings, entry.decision)
            if run_cache.events_readable(entry.run):  # alerts written after the entry, maybe: decided again
                from .verdict import decide, mark_echoes

                d = decide(entry.run, entry.findings, alerts)
                return Analysis(entry.run, mark_echoes(entry.findings, d), d)
            entry = None  # its events are damaged: a miss, parsed again
    if cache and entry is not None:
        res = analyze_run(entry.run, alerts)
        run_cache.store_analysis(entry.folder, res.findings, res.decision, _json_line(res))
        return res
    from .ingest import start_ingest

    # the workers parse while this process loads pandas, the model builder, the detectors, the report
    # and the knowledge base
    with start_ingest(paths, progress=progress, note=note) as job:
        from . import detectors, report, verdict  # noqa: F401 - loaded now, used below
        from .model_build import build_run

        if job.parallel:
            warm_knowledge_base()
            from .malloc import warm_heap

            warm_heap(job.total // HEAP_WARM_SHARE)
        parsed = job.result()
    run = build_run(parsed, release=True)
    del parsed
    if not cache:
        return analyze_run(run, alerts)
    res = analyze_run(run, alerts)

    def store() -> None:
        run_cache.store(paths, run, res.findings, res.decision, _json_line(res))

    res.pending_store = store
    if not defer_store:
        res.finish()
    return res


def warm_knowledge_base() -> None:
    """Read and compile the failure knowledge base now (``failures.toml``: its TOML and about 220
    patterns, 0.1-0.18 s of CPU), as the detectors and the decision would on their first question:
    nearly every analysis asks one, and asked while the parse workers run it is off the serial
    path to the verdict. The same entries either way (read once per process, immutable)."""
    from .nccl import failures

    failures.classify("")


def _json_line(res: Analysis) -> str | None:
    """The ``--json`` line to keep with a cache entry; None (no line kept) if it cannot be made."""
    from .report import json_text

    try:
        return json_text(res)
    except Exception:  # noqa: BLE001 - a report that cannot be cached is only not cached
        return None
