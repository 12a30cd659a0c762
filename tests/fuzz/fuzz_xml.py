"""Fuzz target: NCCL topology / graph XML dumps (``parse_topo_xml``). Allowed: ``ValueError``.

Run: ``python tests/fuzz/fuzz_xml.py --seconds 60``.
"""
from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import corpus_file, mutate_bytes, run_fuzz

from ncclscope.sources.topo_xml import parse_topo_xml

SEEDS = [corpus_file("topo.xml") or b"<system version='1'><gpu dev='0'/></system>",
         corpus_file("graph.xml") or b"<graphs version='1'><graph id='0'><channel/></graph></graphs>",
         b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><system>&a;</system>']


def one(rng: random.Random, deep: bool | None = None) -> None:
    try:
        parse_topo_xml(mutate_bytes(rng, rng.choice(SEEDS)), "topo.xml")
    except ValueError:
        pass


if __name__ == "__main__":
    raise SystemExit(run_fuzz("topo_xml", one))
