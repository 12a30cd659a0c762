"""How long each dashboard page takes in the browser on a generated 1,024-rank run: from the click on its link
to its content on screen (headless Chromium through Debian's chromedriver, the app on the server `serve` uses).

Prints one line a round and the median per page; asserts nothing (the browser test checks that each page
renders, whatever the machine's load). The goal the pages were built to: under 2 s each, cold.

Usage: ``.venv/bin/python benchmarks/dashboard_pages.py [--ranks 1024] [--rounds 3] [--out x.json]``
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "dashboard"))
GOAL_S = 2.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()

    from ncclscope.dashboard.app import create_app
    from ncclscope.dashboard.data import RunStore
    from ncclscope.synth import generate_run
    from test_dashboard_browser import Browser, Server, pages_of_1024  # the tests' driver and server

    timings: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="ncclscope-pages-") as tmp:
        truth = generate_run(Path(tmp) / "run", nranks=args.ranks, steps=6, fault="hang")
        pages = pages_of_1024(truth.culprit_ranks[0])
        if args.ranks != 1024:
            pages = [p for p in pages if "hosts:" not in p[2]]
        for r in range(args.rounds):  # a new app and browser each round: every page is opened cold
            rs = RunStore(Path(tmp) / f"store{r}")
            server = Server(create_app(path=Path(tmp) / "run", run_store=rs, wait=True))
            b = Browser()
            try:
                b.get(server.link("/"))
                b.wait_text("#verdict-banner", "HANG")
                line = []
                for nav, css, needle in pages:
                    t = time.perf_counter()
                    b.click(nav)
                    b.wait_text(css, needle)
                    dt = time.perf_counter() - t
                    timings.setdefault(nav[5:], []).append(dt)
                    line.append(f"{nav[5:]} {dt:.2f} s")
                print(f"round {r + 1}: " + ", ".join(line), flush=True)
            finally:
                b.quit()
                server.close()
                rs.close()
    med = {k: statistics.median(v) for k, v in timings.items()}
    print(f"{args.ranks} ranks, median of {args.rounds} rounds, click to content: "
          + ", ".join(f"{k} {v:.2f} s" for k, v in med.items()))
    over = {k: round(v, 2) for k, v in med.items() if v > GOAL_S}
    print(f"over the {GOAL_S} s goal: {over or 'none'} ({threading.active_count()} threads left)")
    if args.out:
        args.out.write_text(json.dumps({"ranks": args.ranks, "rounds": timings, "median": med}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
