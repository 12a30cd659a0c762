"""Scan every regular expression in analyzer/sources for super-linear backtracking.

For each compiled pattern, real lines it matches (corpus and reference examples) are "pumped":
at every split point a run of one character is inserted, the rest is cut or kept, and a
character that breaks the match is appended. A pattern whose time grows faster than the input
(checked at two lengths) is reported. Run: ``python tests/fuzz/redos_scan.py [--n 4000]``.
"""
from __future__ import annotations

import argparse
import importlib
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
CORPUS = ROOT.parent / "shared" / "corpus"
REFERENCE = ROOT.parent / "shared" / "reference"
MODULES = sorted(p.stem for p in (ROOT / "analyzer" / "sources").glob("*.py") if not p.stem.startswith("_"))
PUMP = [" ", "1", "a", ".", "/", ":", "-", "[", "(", ",", "x1", "1 ", " 1", "1.", "1/", "a.", "1, "]


def all_patterns() -> list[tuple[str, re.Pattern]]:
    out = []
    for m in MODULES:
        mod = importlib.import_module(f"ncclscope.sources.{m}")
        for name, val in vars(mod).items():
            if isinstance(val, re.Pattern):
                out.append((f"{m}.{name}", val))
    return out


def sample_lines() -> list[str]:
    lines: set[str] = set()
    for base in (CORPUS, REFERENCE):
        if not base.exists():
            continue
        for p in base.rglob("*"):
            if p.is_file() and p.stat().st_size < 5_000_000 and p.suffix not in (".pkl",) and "fr_timeout" not in p.name:
                for ln in p.read_bytes().decode("utf-8", "replace").splitlines():
                    ln = ln.strip().strip("`")
                    if 3 < len(ln) < 400:
                        lines.add(ln)
                        if " NCCL INFO " in ln:
                            lines.add(ln.split(" NCCL INFO ", 1)[1])
                        if "]:" in ln:
                            lines.add(ln.split("]:", 1)[1])
    return sorted(lines)


class BytesAsText:
    """A bytes pattern driven with text (encoded as UTF-8 with surrogates escaped)."""

    def __init__(self, rx: re.Pattern) -> None:
        self.rx = rx

    def search(self, s: str):
        return self.rx.search(s.encode("utf-8", "surrogateescape"))

    def match(self, s: str):
        return self.rx.match(s.encode("utf-8", "surrogateescape"))


def timed(rx: re.Pattern, s: str) -> float:
    t = time.perf_counter()
    rx.search(s)
    rx.match(s)
    return time.perf_counter() - t


def confirm(rx: re.Pattern, mk, n: int) -> bool:
    """Timing is noisy on a shared machine: confirm at 4x and 16x the length, best of three."""
    t4 = min(timed(rx, mk(4 * n)) for _ in range(5))
    t16 = min(timed(rx, mk(16 * n)) for _ in range(5))
    if not (t16 > 8 * t4 and t16 > 0.05):
        return False
    t64 = min(timed(rx, mk(64 * n)) for _ in range(2))
    return t64 > 8 * t16  # quadratic: 16x per 4x, linear: 4x; twice in a row, so load noise does not count


def variants(s: str, n: int):
    step = max(1, len(s) // 40)
    for i in range(0, len(s) + 1, step):
        for c in PUMP + [s[i:i + 1], s[max(0, i - 3):i]]:
            if not c:
                continue
            k = max(1, n // len(c))
            yield lambda k, i=i, c=c: s[:i] + c * k + "\x01"
            yield lambda k, i=i, c=c: s[:i] + c * k + s[i:] + "\x01"
            if i:
                yield lambda k, i=i: s[:i] * max(1, k * len(c) // i) + "\x01"


def scan(n: int, per_pattern: int = 3, verbose: bool = False) -> list[tuple[str, str, float, float]]:
    lines = sample_lines()
    bad = []
    for name, pattern in all_patterns():
        rx = BytesAsText(pattern) if isinstance(pattern.pattern, bytes) else pattern
        samples = [ln for ln in lines if rx.search(ln)]
        samples = sorted(samples, key=len)[:per_pattern] or ["a:1:1 [0] NCCL INFO x", "[PG 0 Rank 0] x"]
        worst = (0.0, 0.0, "")
        for s in samples:
            for mk in variants(s, n):
                small = mk(max(1, n // 4))
                t_small = timed(rx, small)
                if t_small < 2e-4:
                    continue
                big = mk(n)
                t_big = timed(rx, big)
                if t_big > worst[1]:
                    worst = (t_small, t_big, big[:80])
                if t_big > 8 * t_small * 1.5 and t_big > 0.01 and confirm(rx, mk, n):
                    bad.append((name, big[:80], t_small, t_big))
                    break
            else:
                continue
            break
        if verbose:
            print(f"{name:40} worst {worst[1]*1e3:8.2f} ms  {worst[2]!r}")
    return bad


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=4000)
    ap.add_argument("-v", action="store_true")
    a = ap.parse_args()
    bad = scan(a.n, verbose=a.v)
    for name, s, ts, tb in bad:
        print(f"SUPER-LINEAR {name}: {ts*1e3:.1f} ms -> {tb*1e3:.1f} ms on {s!r}...")
    print(f"{len(all_patterns())} patterns scanned, {len(bad)} super-linear")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
