"""PyTorch's Flight Recorder analyzer (fr_trace) and ncclscope side by side on every scenario of scenarios.py.

Each scenario's dumps are written to a temporary folder (removed at the end unless --keep), then:
- fr_trace runs as a user runs it: its ``main`` on the folder with its default options, one process per
  scenario and listing order. Its answers depend on the order the directory lists the files in (it compares
  every rank with the first file it reads), which a filesystem decides (ext4: by a hash of the name); so it
  runs twice, the files listed by rank ascending (rank 0 first, as test_fr_analysis.py orders them) and
  descending. Its report is read as a verdict: the first problem it prints
  ("Not all ranks joining collective" -> hang, its missing ranks the culprits; "Collective sequence number:
  N has errors" -> desync, the culprit ranks it names, or hang when every error is a state mismatch;
  "Input/output mismatch" -> desync, no culprit), nothing -> healthy, a stop ("Missing dump files", an
  exception) -> no answer;
- ncclscope analyzes the folder in-process (``analyze_paths``, no cache): its verdict, culprit ranks, stuck
  (pg, seq) and certainty.
An answer is right when verdict, culprit ranks and stuck (process group, sequence number) are the expected ones.

    .venv/bin/python benchmarks/fr_trace/run.py [--only NAME ...] [--markdown FILE] [--keep DIR]
                                                [--baseline PYTHON]

``--baseline PYTHON``: also run another installed ncclscope (``PYTHON -m ncclscope analyze --json
--no-cache``), e.g. an earlier release, as a column of its own.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from scenarios import SCENARIOS, Expected, Scenario

HEADS = (
    (re.compile(r"Not all ranks joining collective, sequence number: (\d+)"), "missing"),
    (re.compile(r"Collective sequence number: (\d+) has errors"), "errors"),
    (re.compile(r"Input/output mismatch in the collective sequence number: (\d+)"), "in_out"),
)
CULPRIT_RE = re.compile(r"Culprit rank (\d+); Error type: (\w+)")


@dataclass(frozen=True)
class Answer:
    verdict: str
    culprits: tuple[int, ...] = ()
    stuck: tuple[str, int] | None = None
    note: str = ""

    def right(self, want: Expected) -> bool:
        return (self.verdict, self.culprits, self.stuck) == (want.verdict, tuple(sorted(want.culprits)), want.stuck)

    def short(self) -> str:
        if self.verdict in ("healthy", "stopped", "error"):
            return self.verdict + (f" ({self.note})" if self.note and self.verdict != "healthy" else "")
        who = ",".join(map(str, self.culprits)) or "-"
        where = f" {self.stuck[0]}#{self.stuck[1]}" if self.stuck else ""
        return f"{self.verdict} [{who}]{where}"


def expected_text(e: Expected) -> str:
    return Answer(e.verdict, tuple(sorted(e.culprits)), e.stuck).short()


def read_fr_trace(text: str, rc: int) -> Answer:
    """fr_trace's first reported problem as an answer."""
    m = re.search(r"Missing dump files from ranks (\{[^}]*\})", text)
    if m:
        return Answer("stopped", note=f"missing dump files {m.group(1)}")
    lines = text.splitlines()
    for i, line in enumerate(lines):
        for pat, kind in HEADS:
            h = pat.search(line)
            if not h:
                continue
            seq = int(h.group(1))
            block = []
            for nxt in lines[i + 1:]:
                if any(p.search(nxt) for p, _ in HEADS):
                    break
                block.append(nxt)
            text_b = "\n".join(block)
            g = re.search(r"group info: (\S+)", text_b)
            pg = g.group(1).split(":", 1)[0] if g else "?"
            if kind == "missing":
                mr = re.search(r"missing ranks: \{([^}]*)\}", text_b)
                ranks = tuple(sorted(int(x) for x in re.findall(r"\d+", mr.group(1)))) if mr else ()
                return Answer("hang", ranks, (pg, seq))
            if kind == "errors":
                errs = CULPRIT_RE.findall(text_b)
                ranks = tuple(sorted({int(r) for r, _ in errs}))
                states = {t for _, t in errs}
                verdict = "hang" if states == {"COLLECTIVE_STATE_MISMATCH"} else "desync"
                return Answer(verdict, ranks, (pg, seq))
            return Answer("desync", (), (pg, seq))
    if rc != 0:
        last = next((ln for ln in reversed(lines) if ln.strip()), "")
        return Answer("error", note=last.strip()[:80])
    return Answer("healthy")


# fr_trace's own main, with the directory listing in a fixed order (argv[1]: asc | desc by the rank in the name)
LAUNCH = """
import os, re, sys
order = sys.argv.pop(1)
walk = os.walk
def rank(name):
    m = re.search(r"(\\d+)$", name)
    return int(m.group(1)) if m else -1
def listed(*a, **k):
    for root, dirs, files in walk(*a, **k):
        yield root, dirs, sorted(files, key=rank, reverse=order == "desc")
os.walk = listed
from torch.distributed.flight_recorder.fr_trace import main
main(sys.argv[1:])
"""


def run_fr_trace(folder: Path, python: str, order: str) -> tuple[Answer, str]:
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    p = subprocess.run([python, "-c", LAUNCH, order, str(folder)],
                       capture_output=True, text=True, timeout=300, env=env, check=False)
    out = p.stdout + "\n" + p.stderr
    return read_fr_trace(out, p.returncode), out


def run_ncclscope_process(folder: Path, python: str) -> Answer:
    """Another installed ncclscope, as a process: its ``analyze --json``."""
    import json

    p = subprocess.run([python, "-m", "ncclscope", "analyze", str(folder), "--json", "--no-cache", "--no-progress"],
                       capture_output=True, text=True, timeout=300, check=False, cwd=folder)
    try:
        j = json.loads(p.stdout)
    except ValueError:
        return Answer("error", note=(p.stderr.strip().splitlines() or ["no output"])[-1][:80])
    st = j.get("stuck")
    return Answer(j["verdict"], tuple(sorted(j.get("culprit_ranks") or [])),
                  (str(st["pg"]), int(st["seq"])) if st else None)


def run_ncclscope(folder: Path) -> tuple[Answer, str | None]:
    from ncclscope.analysis import analyze_paths

    d = analyze_paths([folder], cache=False).decision
    stuck = (d.stuck.pg, d.stuck.seq) if d.stuck else None
    return Answer(d.verdict.value, tuple(sorted(d.culprit_ranks)), stuck), d.certainty


# scenario, fr_trace (rank 0 first, last rank first), ncclscope, its certainty, the baseline ncclscope (or None)
Row = tuple[Scenario, Answer, Answer, Answer, str | None, Answer | None]


def _ok(a: Answer, s: Scenario) -> str:
    return "yes" if a.right(s.expected) else "NO"


def table(rows: list[Row], markdown: bool) -> str:
    base = any(r[5] is not None for r in rows)
    head = ["scenario", "source", "expected", "fr_trace (rank 0 first)", "ok", "fr_trace (last rank first)", "ok",
            *(["ncclscope before", "ok"] if base else []), "ncclscope", "certainty", "ok"]
    body = [[s.name, s.group, expected_text(s.expected), fa.short(), _ok(fa, s),
             "same" if fd == fa else fd.short(), _ok(fd, s),
             *([b.short(), _ok(b, s)] if b is not None else ["-", "-"] if base else []),
             nc.short(), c or "-", _ok(nc, s)]
            for s, fa, fd, nc, c, b in rows]
    if markdown:
        out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        out += ["| " + " | ".join(x.replace("|", "/") for x in r) + " |" for r in body]
        return "\n".join(out)
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body, strict=True)]
    fmt = "  ".join(f"{{:{w}}}" for w in widths)
    return "\n".join(fmt.format(*r) for r in [head, *body])


def totals(rows: list[Row]) -> list[tuple[str, int, int, int, int, int | None, int]]:
    """(group, scenarios, fr_trace right rank 0 first, last rank first, in both orders, the baseline ncclscope
    right (None when not run), ncclscope right)."""
    out = []
    for group in ("test_fr_analysis", "miss", "fr_trace_fault", "real", "all"):
        mine = [r for r in rows if group in ("all", r[0].group)]
        if mine:
            base = None if any(r[5] is None for r in mine) else sum(
                b.right(s.expected) for s, _, _, _, _, b in mine if b is not None)
            out.append((group, len(mine), sum(fa.right(s.expected) for s, fa, *_ in mine),
                        sum(fd.right(s.expected) for s, _, fd, *_ in mine),
                        sum(fa.right(s.expected) and fd.right(s.expected) for s, fa, fd, *_ in mine), base,
                        sum(nc.right(s.expected) for s, _, _, nc, *_ in mine)))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="*", help="scenario names (default: all)")
    ap.add_argument("--markdown", type=Path, help="also write the table and totals as Markdown to this file")
    ap.add_argument("--keep", type=Path, help="write the dumps here and keep them")
    ap.add_argument("--python", default=sys.executable, help="the Python that runs fr_trace (with torch)")
    ap.add_argument("--baseline", help="the Python of another installed ncclscope to run as a column of its own")
    ap.add_argument("-v", "--verbose", action="store_true", help="print fr_trace's output of wrong answers")
    args = ap.parse_args(argv)
    chosen = [s for s in SCENARIOS if not args.only or s.name in args.only]
    root = args.keep or Path(tempfile.mkdtemp(prefix="fr-bench-"))
    rows: list[Row] = []
    t0 = time.perf_counter()
    try:
        for s in chosen:
            folder = root / s.name
            s.write(folder)
            fa, out_a = run_fr_trace(folder, args.python, "asc")
            fd, out_d = run_fr_trace(folder, args.python, "desc")
            nc, certainty = run_ncclscope(folder)
            base = run_ncclscope_process(folder, args.baseline) if args.baseline else None
            rows.append((s, fa, fd, nc, certainty, base))
            if args.verbose:
                for order, a, out in (("rank 0 first", fa, out_a), ("last rank first", fd, out_d)):
                    if not a.right(s.expected):
                        print(f"--- {s.name}: fr_trace, {order}\n{out.strip()[-1500:]}\n", file=sys.stderr)
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    print(table(rows, markdown=False))
    print()
    print(f"{'':18} {'':13} fr_trace right: rank 0 first / last rank first / both"
          f"{'   ncclscope before' if args.baseline else ''}   ncclscope right")
    for group, n, a, d, both, base, nc in totals(rows):
        before = f"   {base:16}" if base is not None else ""
        print(f"{group:18} {n:3} scenarios   {a:3} / {d:3} / {both:3}{before}   {nc:3}")
    print(f"({time.perf_counter() - t0:.0f} s)")
    if args.markdown:
        lines = [table(rows, markdown=True), "",
                 "| scenarios | count | fr_trace right, rank 0 first | last rank first | in both orders |"
                 + (" ncclscope before |" if args.baseline else "") + " ncclscope right |",
                 "|---|---|---|---|---|" + ("---|" if args.baseline else "") + "---|"]
        lines += [f"| {g} | {n} | {a} | {d} | {b} |" + (f" {base} |" if args.baseline else "") + f" {c} |"
                  for g, n, a, d, b, base, c in totals(rows)]
        args.markdown.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
