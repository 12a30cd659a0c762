"""The pipeline: paths -> parsed files -> run model -> findings -> decision."""
from __future__ import annotations

import json
import os
import pickle
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .model import Finding, Run
from .result import Analysis

# build, ingest and the detectors (numpy, pandas) are imported where they are used: a re-open of a
# cached analysis needs none of them


ALERTS_FILE = "alerts.jsonl"  # the live monitor's alerts in a run folder (live/monitor.py)
ALERTS_MAX_BYTES = 4 << 20


# From this many collectives rows a process that may fork (``share``) runs the detectors that read the
# whole table in a forked child while it runs the others (docs/performance.md, eighth round): below
# it the fork and the findings' trip back cost more than the child saves.
PARALLEL_MIN_ROWS = 2_000_000
# the detectors that scan the collectives table; straggler and hotspots share one memo (late arrivals)
CHILD_DETECTORS = ("desync", "straggler", "hotspots")


def analyze_run(run: Run, alerts: list[dict[str, Any]] | None = None, share: bool = False) -> Analysis:
    """``alerts``: the live monitor's alerts for this run: a hang it confirmed stays the verdict when
    what failed after it is its echo (``verdict.decide``). ``share``: this process may fork (one
    thread, it ends with the analysis: ``analyze``), so a large run's table detectors may run in a
    child (``run_findings``); the findings are the same either way."""
    from .verdict import decide

    findings = run_findings(run, share)
    order = {"critical": 0, "error": 1, "warning": 2, "info": 3}
    findings.sort(key=lambda f: order[f.severity.value])
    return Analysis(run, findings, decide(run, findings, alerts or ()))


def run_findings(run: Run, share: bool = False) -> list[Finding]:
    """The detectors' findings in ``DETECTORS`` order, as ``run_detectors(run)`` gives them. With
    ``share``, a run of at least ``PARALLEL_MIN_ROWS`` rows and this process's only thread, the
    ``CHILD_DETECTORS`` run in a forked child (a copy-on-write view of the run; nothing is copied
    out to it) while this process runs the rest; the child sends its findings back through a pipe
    as a pickle, which only this process's own child writes. A child that fails or sends nothing
    readable has its detectors run here after all. Memoised parts of the run (``run.memo``) that
    the child computed are computed again here if something asks for them."""
    from .detectors import DETECTORS, run_detectors

    names = list(DETECTORS)
    theirs = [n for n in names if n in CHILD_DETECTORS]
    rows = 0 if run.collectives is None else len(run.collectives)
    if not share or rows < PARALLEL_MIN_ROWS or not theirs or not _fork_ok():
        return run_detectors(run)
    got = _in_child(lambda: {n: run_detectors(run, only=[n]) for n in theirs},
                    lambda: {n: run_detectors(run, only=[n]) for n in names if n not in theirs})
    if got is None:
        return run_detectors(run)
    mine, child = got
    if not isinstance(child, dict) or set(child) != set(theirs):
        child = {n: run_detectors(run, only=[n]) for n in theirs}
    return [f for n in names for f in (mine[n] if n in mine else child[n])]


def _fork_ok() -> bool:
    """Whether forking is safe here: a fork start exists and no other thread could hold a lock."""
    return hasattr(os, "fork") and threading.active_count() == 1


def _in_child(child_work: Callable[[], Any], own_work: Callable[[], Any]) -> tuple[Any, Any] | None:
    """(``own_work()``, ``child_work()`` as run in a forked child, or None if the child failed); None
    when no child could be started (then nothing has run)."""
    try:
        r, w = os.pipe()
    except OSError:
        return None
    try:
        pid = os.fork()
    except OSError:
        os.close(r)
        os.close(w)
        return None
    if pid == 0:  # the child: its work, pickled into the pipe, and out without the parent's teardown
        code = 1
        try:
            os.close(r)
            data = pickle.dumps(child_work(), protocol=5)
            with os.fdopen(w, "wb") as f:
                f.write(data)
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    try:
        mine = own_work()
    finally:
        with os.fdopen(r, "rb") as f:  # read to the end, or the child would wait on a full pipe
            data = f.read()
        _, status = os.waitpid(pid, 0)
    try:
        theirs = pickle.loads(data) if status == 0 and data else None
    except Exception:  # noqa: BLE001 - a child's unreadable answer: its work is done here instead
        theirs = None
    return mine, theirs


def read_alerts(paths: list[Path]) -> list[dict[str, Any]]:
    """The alerts of ``alerts.jsonl`` in the input folders: a regular file only, read without
    blocking or following a link, at most 4 MB; a line that is not a JSON object is skipped."""
    from . import safe_io

    out: list[dict[str, Any]] = []
    for p in paths:
        f = Path(p) / ALERTS_FILE
        try:
            with safe_io.open_regular(f) as fh:
                data = fh.read(ALERTS_MAX_BYTES)
        except OSError:
            continue
        for line in data.decode("utf-8", "replace").splitlines():
            try:
                a = json.loads(line)
            except ValueError:
                continue
            if isinstance(a, dict) and isinstance(a.get("kind"), str):
                out.append(a)
    return out


def analyze_paths(paths: list[Path], progress: Callable[[int, int], None] | None = None,
                  cache: bool = True, defer_store: bool = False,
                  note: Callable[[str], None] | None = None, share: bool = False) -> Analysis:
    """``cache``: reuse the parsed run stored by an earlier call on the same, unchanged files, and its
    findings and decision while the detectors' code is unchanged (cache.py). ``defer_store``: leave
    writing a new entry to ``Analysis.finish()``, so that a caller can show the verdict first. ``note``:
    told of one-off delays (ingest). ``share``: the process may fork to run detectors (``analyze_run``)."""
    alerts = read_alerts(paths)
    if cache:
        from . import cache as run_cache

        entry = run_cache.open_entry(paths, want_analysis=True)
        if entry is not None and entry.findings is not None:
            if not alerts:
                return Analysis(entry.run, entry.findings, entry.decision)
            if run_cache.events_readable(entry.run):  # alerts written after the entry, maybe: decided again
                from .verdict import decide

                return Analysis(entry.run, entry.findings, decide(entry.run, entry.findings, alerts))
            entry = None  # its events are damaged: a miss, parsed again
    if cache and entry is not None:
        res = analyze_run(entry.run, alerts, share)
        run_cache.store_analysis(entry.folder, res.findings, res.decision, _json_line(res))
        return res
    from .ingest import start_ingest

    # the workers parse while this process loads pandas, the model builder, the detectors and the report
    with start_ingest(paths, progress=progress, note=note) as job:
        from . import detectors, report, verdict  # noqa: F401 - loaded now, used below
        from .model_build import build_run

        parsed = job.result()
    run = build_run(parsed, release=True)
    del parsed
    if not cache:
        return analyze_run(run, alerts, share)
    res = analyze_run(run, alerts, share)

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
