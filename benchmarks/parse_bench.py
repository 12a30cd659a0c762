"""Parse + analyse benchmark on generated runs; same as ``ncclscope bench``.

Run: ``.venv/bin/python benchmarks/parse_bench.py [--ranks 64,512,4096] [--steps N]``.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ncclscope.commands.bench import command  # noqa: E402

if __name__ == "__main__":
    command.main(prog_name="parse_bench")
