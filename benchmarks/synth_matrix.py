"""Detector accuracy at scale: generated NCCL-format runs of 64 to 4,096 ranks (8 GPUs a host) with
injected hangs, crashes, desyncs and stragglers at random ranks and steps, plus fault-free runs, each
with the evidence a user may have (``ncclscope.synth.EVIDENCE``): everything; NCCL logs only (the job
killed from outside, no time; a fault-free one cut at a random moment); older PyTorch's watchdog lines
only; and the excerpts users paste of a start-up that hung (``ncclscope.synth.excerpts``: a store-based barrier,
a store wait for the NCCL unique id, the heartbeat monitor, an nccl-tests run with no row), with their
fault-free forms where they have one. Prints, per evidence, size and fault class, how often the verdict and the culprit were right and
the time to a verdict; then, per evidence and class, the precision and recall of the verdict and of the
culprit ranks, and the false alarms on fault-free runs.

    python benchmarks/synth_matrix.py --sizes 64,512,4096 --seeds 3 --evidence full,nccl_only,watchdog_only

Precision of class c: of the runs judged c, the share that were c; recall: of the runs that were c, the
share judged c. Culprits are counted by rank, over runs whose verdict is right: precision, the named ranks
that are culprits; recall, the culprits that were named. A false alarm is a fault-free run judged an
incident (anything but healthy, unknown or a refusal: those say the evidence does not tell). With
stderr only, a fault-free run leaves nothing to judge: its right answer is no verdict (unknown, or
the input refused as holding nothing readable), counted as unknown.
"""
from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ncclscope.analysis import analyze_paths
from ncclscope.input_names import InputError
from ncclscope.synth import EVIDENCE, EVIDENCE_FAULTS, EXCERPTS, generate_run, write_excerpt

EXCERPT = "excerpt:"  # evidence "excerpt:<kind>": the few lines of one pasted excerpt (ncclscope.synth.excerpts)
NOT_ALARMS = ("healthy", "unknown", "refused")  # refused: the input held nothing to judge (a clear error)


@dataclass(frozen=True)
class Outcome:
    evidence: str
    nranks: int
    truth: str  # healthy | hang | crash | desync | degraded
    got: str
    want_culprits: tuple[int, ...]
    got_culprits: tuple[int, ...]
    seconds: float
    fault_free: bool = False

    @property
    def verdict_ok(self) -> bool:
        return self.got == self.truth

    @property
    def culprit_ok(self) -> bool:
        return self.verdict_ok and self.got_culprits == self.want_culprits


def evidence_faults(evidence: str) -> tuple[str | None, ...]:
    """The faults one kind of evidence can show."""
    if evidence.startswith(EXCERPT):
        return (None, "hang") if EXCERPTS[evidence[len(EXCERPT):]][1] else ("hang",)
    return EVIDENCE_FAULTS[evidence]


def _judge(path: Path) -> tuple[str, tuple[int, ...], float]:
    t0 = time.perf_counter()
    try:
        a = analyze_paths([path], cache=False)
        got, named = a.decision.verdict.value, tuple(a.decision.culprit_ranks)
    except InputError:
        got, named = "refused", ()
    return got, named, time.perf_counter() - t0


def one_excerpt(evidence: str, n: int, fault: str | None, seed: int) -> Outcome:
    with tempfile.TemporaryDirectory(prefix="ncclscope-synth-") as tmp:
        want, culprits = write_excerpt(Path(tmp) / "x", evidence[len(EXCERPT):], n, fault is not None, seed)
        got, named, dt = _judge(Path(tmp) / "x")
    if want == "unknown" and got == "refused":
        got = "unknown"
    return Outcome(evidence, n, want, got, culprits, named, dt, fault is None)


def one_run(evidence: str, n: int, fault: str | None, seed: int, steps: int) -> Outcome:
    """Generate one run with ``evidence`` and judge it."""
    if evidence.startswith(EXCERPT):
        return one_excerpt(evidence, n, fault, seed)
    rng = random.Random(seed * 1000 + n + 7 * len(evidence))
    rank = rng.randrange(n) if fault else None
    step = rng.randint(2, steps - 2) if fault else None
    extra: dict[str, object] = dict(EVIDENCE[evidence])
    if evidence == "nccl_only":
        extra |= {"lag": rng.randint(1, 3)} if fault else {"scatter": 8}
    with tempfile.TemporaryDirectory(prefix="ncclscope-synth-") as tmp:
        truth = generate_run(Path(tmp) / "run", nranks=n, steps=steps, buckets=2, fault=fault, fault_rank=rank,
                             fault_step=step, seed=seed, **extra)  # type: ignore[arg-type]
        got, named, dt = _judge(truth.path)
    want = truth.verdict
    if fault is None and not truth.nccl_lines:  # stderr with no watchdog line: nothing to judge
        want, got = "unknown", ("unknown" if got == "refused" else got)
    return Outcome(evidence, n, want, got, tuple(truth.culprit_ranks), named, dt, fault is None)


def run_matrix(sizes: Sequence[int], seeds: int, steps: int, evidence: Sequence[str],
               log: bool = False) -> list[Outcome]:
    out = []
    for ev in evidence:
        for n in sizes:
            for fault in evidence_faults(ev):
                for seed in range(seeds):
                    o = one_run(ev, n, fault, seed, steps)
                    out.append(o)
                    if log:
                        print(f"{ev:13s} n={n:5d} {o.truth:9s} seed={seed} -> {o.got} {list(o.got_culprits)[:4]} "
                              f"(expected {list(o.want_culprits)}) {o.seconds:.1f}s", flush=True)
    return out


def _ratio(a: int, b: int) -> str:
    return f"{a}/{b}" if b else "-"


def class_scores(outcomes: Iterable[Outcome]) -> dict[tuple[str, str], dict[str, tuple[int, int]]]:
    """(evidence, class) -> {verdict_precision, verdict_recall, culprit_precision, culprit_recall,
    false_alarms} as (hits, out of)."""
    os_ = list(outcomes)
    out: dict[tuple[str, str], dict[str, tuple[int, int]]] = {}
    for ev in sorted({o.evidence for o in os_}):
        mine = [o for o in os_ if o.evidence == ev]
        for c in sorted({o.truth for o in mine} | {o.got for o in mine if o.got not in NOT_ALARMS}):
            judged = [o for o in mine if o.got == c]
            were = [o for o in mine if o.truth == c]
            named = sum(len(o.got_culprits) for o in judged if o.verdict_ok)
            named_right = sum(len(set(o.got_culprits) & set(o.want_culprits)) for o in judged if o.verdict_ok)
            culprits = sum(len(o.want_culprits) for o in were)
            found = sum(len(set(o.got_culprits) & set(o.want_culprits)) for o in were if o.verdict_ok)
            row = {"verdict_precision": (sum(o.verdict_ok for o in judged), len(judged)),
                   "verdict_recall": (sum(o.verdict_ok for o in were), len(were)),
                   "culprit_precision": (named_right, named), "culprit_recall": (found, culprits)}
            if any(o.fault_free for o in were):
                free = [o for o in were if o.fault_free]
                row["false_alarms"] = (sum(o.got not in NOT_ALARMS for o in free), len(free))
            out[(ev, c)] = row
    return out


def tables(outcomes: Sequence[Outcome]) -> str:
    lines = ["| evidence | ranks | fault | runs | verdict right | culprit right | seconds to verdict (max) |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    groups: dict[tuple[str, int, str], list[Outcome]] = defaultdict(list)
    for o in outcomes:
        groups[(o.evidence, o.nranks, o.truth)].append(o)
    for (ev, n, c), res in sorted(groups.items()):
        lines.append(f"| {ev} | {n} | {c} | {len(res)} | {_ratio(sum(o.verdict_ok for o in res), len(res))} | "
                     f"{_ratio(sum(o.culprit_ok for o in res), len(res))} | {max(o.seconds for o in res):.1f} |")
    lines += ["", ("| evidence | class | verdict precision | verdict recall | culprit precision | culprit recall | "
                   "false alarms (fault-free) |"), "| --- | --- | --- | --- | --- | --- | --- |"]
    for (ev, c), s in class_scores(outcomes).items():
        fa = _ratio(*s["false_alarms"]) if "false_alarms" in s else "-"
        lines.append(f"| {ev} | {c} | {_ratio(*s['verdict_precision'])} | {_ratio(*s['verdict_recall'])} | "
                     f"{_ratio(*s['culprit_precision'])} | {_ratio(*s['culprit_recall'])} | {fa} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--sizes", default="64,512,4096")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--evidence", default=",".join([*EVIDENCE, *(EXCERPT + k for k in EXCERPTS)]))
    args = ap.parse_args(argv)
    evidence = [e for e in args.evidence.split(",") if e]
    known = [*EVIDENCE, *(EXCERPT + k for k in EXCERPTS)]
    unknown = [e for e in evidence if e not in known]
    if unknown:
        ap.error(f"unknown evidence {unknown}: one of {known}")
    outcomes = run_matrix([int(s) for s in args.sizes.split(",")], args.seeds, args.steps, evidence, log=True)
    print()
    print(tables(outcomes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
