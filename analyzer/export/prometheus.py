"""The run's state in Prometheus' text exposition format (node_exporter's textfile collector reads a
``*.prom`` file; see docs/dashboard.md for the Grafana panels).

Per rank and process group: the last enqueued and completed sequence numbers (the process-group
status the hang rule judges) and the seconds since the rank last made progress; per run: the
verdict, the culprit ranks, the stuck collective, findings by kind and severity, and the live
monitor's alerts by kind (``alerts.jsonl``)."""
from __future__ import annotations

import enum
import math
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ..result import Analysis
from ..metrics.progress import judged_progress
from ..metrics.timeline import run_end
from ..metrics.records import arrival, strs
from ..model import Verdict
from ..text_safety import clean_escaped

PREFIX = "ncclscope"


def _esc(value: object) -> str:
    """A label value escaped as the text format asks (backslash, double quote, newline), and printable:
    every other control character (ESC, BEL, CR, NUL, C1, bidi overrides) that log text may carry is
    written as the visible text ``\\xNN`` (``text_safety.clean_escaped``), never as the raw byte."""
    return clean_escaped(str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n"))


def _labels(labels: dict[str, object]) -> str:
    return "{" + ",".join(f'{k}="{_esc(v)}"' for k, v in labels.items()) + "}" if labels else ""


class MetricType(enum.StrEnum):
    """A metric family's type, as the text format's ``# TYPE`` line names it."""

    GAUGE = "gauge"
    COUNTER = "counter"


class _Out:
    """Metric families in order, each with its HELP and TYPE once."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def family(self, name: str, kind: MetricType, help_text: str, samples: Iterable[tuple[dict[str, object], float]]) -> None:
        full = f"{PREFIX}_{name}" + ("_total" if kind == MetricType.COUNTER else "")  # the text format names counters so
        self.lines += [f"# HELP {full} {help_text}", f"# TYPE {full} {kind}"]
        for labels, value in samples:
            v = "NaN" if value is None or (isinstance(value, float) and math.isnan(value)) else repr(float(value))
            self.lines.append(f"{full}{_labels(labels)} {v}")

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def last_progress(a: Analysis) -> dict[tuple[int, str], float]:
    """(rank, pg) -> the time (epoch s) of the rank's last completed collective, else its last record."""
    df = a.run.collectives
    if not len(df):
        return {}
    t = np.where(np.isfinite(df["t_completed"].to_numpy(dtype=float)), df["t_completed"].to_numpy(dtype=float),
                 arrival(df))
    ok = np.isfinite(t)
    if not ok.any():
        return {}
    s = np.asarray(t[ok])
    keys = list(zip(df["rank"].to_numpy()[ok].tolist(), strs(df["pg"])[ok].tolist(), strict=False))
    out: dict[tuple[int, str], float] = {}
    for k, v in zip(keys, s.tolist(), strict=False):
        if v > out.get(k, -math.inf):
            out[k] = v
    return out


def last_seen(a: Analysis, progress: dict[tuple[int, str], float]) -> float:
    """The time of the run's last sign of life (``metrics.timeline.run_end``; epoch s), now when nothing is timed."""
    t = run_end(a.run)
    return max([*progress.values(), *([t] if t is not None else [])], default=time.time())


def prometheus_text(a: Analysis, alerts: Sequence[dict[str, Any]] = (), now: float | None = None) -> str:
    """The exposition text. ``now`` (epoch s) is when the state is read: the live monitor's clock, or for a
    finished run its last record (so a finished run's numbers do not grow with the age of the file)."""
    progress = last_progress(a)
    if now is None:
        now = last_seen(a, progress)
    status = judged_progress(a.run, a.findings, a.decision.stuck)
    out = _Out()
    rows = [(r, pg, s) for pg, by in sorted(status.items()) for r, s in sorted(by.items())]
    out.family("rank_last_enqueued_seq", MetricType.GAUGE, "Last collective sequence number the rank enqueued, per process group.",
               [({"rank": r, "pg": pg}, s.enqueued) for r, pg, s in rows if s.enqueued is not None])
    out.family("rank_last_completed_seq", MetricType.GAUGE, "Last collective sequence number the rank completed, per process group.",
               [({"rank": r, "pg": pg}, s.completed) for r, pg, s in rows if s.completed is not None])
    out.family("rank_seconds_since_progress", MetricType.GAUGE,
               "Seconds from the rank's last completed collective (or last record) to the time of reading.",
               [({"rank": r, "pg": pg}, max(0.0, now - t)) for (r, pg), t in sorted(progress.items())
                if not pg.endswith(":p2p")])
    d = a.decision
    out.family("verdict", MetricType.GAUGE, "1 for the run's verdict.",
               [({"verdict": v.value}, 1.0 if d.verdict == v else 0.0) for v in Verdict])
    out.family("culprit_rank", MetricType.GAUGE, "1 for each rank the verdict names.", [({"rank": r}, 1.0) for r in d.culprit_ranks])
    out.family("stuck_seq", MetricType.GAUGE, "Sequence number of the stuck collective, per process group.",
               [({"pg": d.stuck.pg, "op": d.stuck.op or ""}, d.stuck.seq)] if d.stuck else [])
    kinds = Counter((f.kind, f.severity.value) for f in a.findings)
    out.family("findings", MetricType.GAUGE, "Findings of the analysis by kind and severity.",
               [({"kind": k, "severity": s}, n) for (k, s), n in sorted(kinds.items())])
    by_kind = Counter(str(al.get("kind", "unknown")) for al in alerts if isinstance(al, dict))
    out.family("alerts", MetricType.COUNTER, "Alerts the live monitor raised, by kind (alerts.jsonl).",
               [({"kind": k}, n) for k, n in sorted(by_kind.items())])
    out.family("state_time_seconds", MetricType.GAUGE, "When this state was read (epoch seconds).", [({}, now)])
    return out.text()
