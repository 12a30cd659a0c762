"""The real-world log shapes (tests/data/wild/<case>/): how each case is checked against EXPECTED.jsonl, and,
run as a script, the accuracy tables docs/accuracy.md shows (by NCCL release, by launcher, by fault class).

    .venv/bin/python tests/data/wild/table.py          # markdown tables on stdout
    .venv/bin/python tests/data/wild/table.py --cases  # plus one line per case that is wrong today
    .venv/bin/python tests/data/wild/table.py --gaps   # plus the misreadings grouped by kind, most cases first
    .venv/bin/python tests/data/wild/table.py --dir tests/data/heldout   # the same tables for another case folder

A case is every file in its folder but SOURCE.md (the citation), analysed in-process as
`ncclscope analyze --json` would analyse them. Facts are those EXPECTED.jsonl lists for the case (nccl_version,
torch_version, cuda_version, world_size, ranks_seen, nnodes, communicators, stuck_seq: the sequence number of
the collective the verdict says is stuck) plus `kb`: the words the findings'
messages or hints should contain. A case's culprits count as right only when its verdict is right."""
from __future__ import annotations

import json
import sys
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

WILD = Path(__file__).resolve().parent
EXPECTED = WILD / "EXPECTED.jsonl"
NOT_INPUT = {"SOURCE.md"}


def load_expected(root: Path = WILD) -> list[dict[str, Any]]:
    """One dict per line of root/EXPECTED.jsonl, in file order; blank lines skipped. Each dict remembers its
    folder under the key `root`, so that a held-out set in another folder is evaluated the same way."""
    out = []
    for n, line in enumerate((root / "EXPECTED.jsonl").read_text().splitlines(), 1):
        if line.strip():
            try:
                out.append({**json.loads(line), "root": str(root)})
            except json.JSONDecodeError as e:
                raise ValueError(f"EXPECTED.jsonl line {n}: {e}") from None
    return out


def case_inputs(case: str, root: Path = WILD) -> list[Path]:
    """The files of a case the analysis reads: all but its citation."""
    folder = root / case
    return sorted(p for p in folder.iterdir() if p.is_file() and p.name not in NOT_INPUT)


@dataclass
class Outcome:
    """What the analysis said about one case against what its thread established."""
    case: str
    facts: dict[str, tuple[Any, Any]] = field(default_factory=dict)  # name -> (want, got)
    verdict: tuple[str, str] = ("", "")
    culprits: tuple[list[int], list[int]] = ([], [])
    error: str | None = None  # the analysis refused the input (its one line)

    @property
    def wrong_facts(self) -> list[str]:
        return [k for k, (w, g) in self.facts.items() if not fact_matches(k, w, g)]

    @property
    def verdict_ok(self) -> bool:
        return self.error is None and self.verdict[0] == self.verdict[1]

    @property
    def culprits_match(self) -> bool:
        return self.error is None and sorted(self.culprits[0]) == sorted(self.culprits[1])

    @property
    def culprits_ok(self) -> bool:
        """The culprits count as right only with the right verdict: [] == [] under a wrong verdict is no credit."""
        return self.verdict_ok and self.culprits_match

    def problems(self) -> list[str]:
        """Each way the analysis differs from the expectation, one short phrase each."""
        if self.error is not None:
            return [f"refused: {self.error}"]
        out = [f"{k}: want {self.facts[k][0]!r} got {self.facts[k][1]!r}" for k in self.wrong_facts]
        if not self.verdict_ok:
            out.append(f"verdict: want {self.verdict[0]} got {self.verdict[1]}")
        if not self.culprits_match:
            out.append(f"culprits: want {self.culprits[0]} got {self.culprits[1]}")
        return out


def fact_matches(name: str, want: Any, got: Any) -> bool:
    """Versions match on what the text shows: torch "2.4.1" is read right as "2.4.1+cu121"."""
    if name == "torch_version" and isinstance(want, str) and isinstance(got, str):
        return got == want or got.startswith(want + "+")
    return bool(want == got)


def read_facts(analysis: Any) -> dict[str, Any]:
    """The facts of EXPECTED.jsonl as the analysis states them."""
    run = analysis.run
    stuck = analysis.decision.stuck
    job = run.job
    seen = {p.rank for p in job.processes if p.rank is not None}
    seen |= {st.rank for st in run.pg_status}
    df = run.collectives
    if len(df):
        seen |= {int(r) for r in df["rank"].unique() if int(r) >= 0}
    return {"nccl_version": job.nccl_version, "torch_version": job.torch_version,
            "cuda_version": job.cuda_version, "world_size": job.world_size,
            "ranks_seen": sorted(seen), "nnodes": max(job.nnodes or 0, len(job.hosts)) or None,
            "communicators": len(run.communicators), "stuck_seq": stuck.seq if stuck else None}


def evaluate(want: dict[str, Any]) -> Outcome:
    """Analyse one case and hold it against its expectation line."""
    from ncclscope.analysis import analyze_paths
    from ncclscope.input_names import InputError

    out = Outcome(want["case"])
    try:
        a = analyze_paths(case_inputs(want["case"], Path(want.get("root", WILD))), cache=False)
    except InputError as e:
        out.error = str(e)
        out.facts = {k: (v, None) for k, v in want.get("facts", {}).items()}
        if want.get("kb"):
            out.facts["kb"] = (list(want["kb"]), [])
        out.verdict = (want["verdict"], "refused")
        out.culprits = (want.get("culprit_ranks", []), [])
        return out
    got = read_facts(a)
    out.facts = {k: (v, got.get(k)) for k, v in want.get("facts", {}).items()}
    if want.get("kb"):
        said = " ".join(f"{f.message} {f.hint or ''}" for f in a.findings).lower()
        out.facts["kb"] = (list(want["kb"]), [w for w in want["kb"] if w.lower() in said])
    out.verdict = (want["verdict"], a.decision.verdict.value)
    out.culprits = (list(want.get("culprit_ranks", [])), list(a.decision.culprit_ranks))
    return out


def _rows(groups: dict[str, list[tuple[dict[str, Any], Outcome]]], by_fault: bool) -> Iterable[str]:
    for key in sorted(groups, key=_sort_key):
        pairs = groups[key]
        n = len(pairs)
        verdict = sum(o.verdict_ok for _, o in pairs)
        if by_fault:
            culprit = sum(o.culprits_ok for _, o in pairs)
            yield f"| {key} | {n} | {verdict}/{n} | {culprit}/{n} |"
        else:
            facts = sum(len(o.facts) for _, o in pairs)
            right = sum(len(o.facts) - len(o.wrong_facts) for _, o in pairs)
            yield f"| {key} | {n} | {right}/{facts} | {verdict}/{n} |"


def _sort_key(key: str) -> tuple[Any, ...]:
    parts = key.split(".")
    if all(p.isdigit() for p in parts):
        return (0, *map(int, parts))
    return (1, key)


def tables(results: list[tuple[dict[str, Any], Outcome]]) -> str:
    """The three markdown tables: by NCCL release, by launcher, by fault class."""
    out: list[str] = []
    for title, col, by_fault in (("NCCL release", "nccl_release", False), ("Launcher", "launcher", False),
                                 ("Fault class", "fault_class", True)):
        groups: dict[str, list[tuple[dict[str, Any], Outcome]]] = defaultdict(list)
        for want, o in results:
            groups[str(want.get(col) or "-")].append((want, o))
        head = "| cases | verdict right | culprits right |" if by_fault else "| cases | facts read right | verdict right |"
        out += [f"| {title} {head}", "|---|---:|---:|---:|", *_rows(groups, by_fault)]
        n = len(results)
        if by_fault:
            out.append(f"| **all** | {n} | {sum(o.verdict_ok for _, o in results)}/{n} | "
                       f"{sum(o.culprits_ok for _, o in results)}/{n} |")
        else:
            facts = sum(len(o.facts) for _, o in results)
            right = sum(len(o.facts) - len(o.wrong_facts) for _, o in results)
            out.append(f"| **all** | {n} | {right}/{facts} | {sum(o.verdict_ok for _, o in results)}/{n} |")
        out.append("")
    return "\n".join(out)


def gap_groups(results: list[tuple[dict[str, Any], Outcome]]) -> list[tuple[str, list[str]]]:
    """Each kind of misreading (refusal, verdict A read as B, a fact read wrong, culprits wrong under the right
    verdict) with the cases that show it, the most common first."""
    groups: dict[str, list[str]] = defaultdict(list)
    for want, o in results:
        if o.error is not None:
            groups["refused as nothing readable"].append(o.case)
            continue
        if not o.verdict_ok:
            groups[f"verdict {o.verdict[0]} read as {o.verdict[1]}"].append(o.case)
        elif not o.culprits_match:
            groups["culprits wrong under the right verdict"].append(o.case)
        for name in o.wrong_facts:
            groups[f"fact {name} wrong"].append(o.case)
    return sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))


def main(argv: list[str]) -> int:
    root = Path(argv[argv.index("--dir") + 1]).resolve() if "--dir" in argv else WILD
    results = [(w, evaluate(w)) for w in load_expected(root)]
    print(tables(results))
    if "--cases" in argv:
        for want, o in results:
            if o.problems():
                print(f"- {o.case} ({want.get('nccl_release')}, {want.get('launcher')}): " + "; ".join(o.problems()))
    if "--gaps" in argv:
        for kind, cases in gap_groups(results):
            print(f"- {len(cases)} {kind}: {', '.join(cases)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
