"""Inputs for the property tests and the standalone fuzz targets: real lines, mutated.

Seeds come from the real runs in the shared corpus and from the format reference (older and
newer NCCL forms). ``mutate`` applies one to three random edits of the kinds real logs suffer:
cut mid-line, junk or NUL bytes, invalid UTF-8 (decoded with ``replace`` as ingest does), CRLF,
huge or negative numbers, two lines spliced, a token repeated. ``run_fuzz`` is the loop behind
every ``tests/fuzz/fuzz_*.py`` script.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import random
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
CORPUS = Path(os.environ.get("NCCLSCOPE_CORPUS", ROOT.parent / "shared" / "corpus"))
REFERENCE = ROOT.parent / "shared" / "reference"
SAMPLES = ROOT / "samples"  # always there: seeds when the shared corpus is not

# Lines from the reference, older and newer NCCL and PyTorch forms, so the seeds span versions.
VERSION_SEEDS = [
    "NCCL version 2.10.3+cuda11.4",
    "host:12:34 [0] NCCL INFO NCCL version 2.30.7+cuda13.0",
    "[2025-11-24 11:20:21] gpu-server320:5:6 [5] misc/socket.cc:46 NCCL WARN socketProgressOpt: Call to send failed",
    "host:12:34 [0] misc/socket.cc:46 (ncclSocketProgress) NCCL WARN Net : Connection closed by remote peer",
    "host:12:34 [0] NCCL INFO comm 0x55d0 rank 0 nranks 8 cudaDev 0 busId 7000 - Init COMPLETE",
    "host:12:34 [0] NCCL INFO comm 0x55d0 rank 1 nranks 8 cudaDev 1 nvmlDev 1 busId 8000 commId 0xabc - Init START",
    ("host:12:34 [0] NCCL INFO ncclCommSplit comm 0x6 rank 0 nranks 2 cudaDev 0 busId 7000 parent 0x5 "
    "splitCount 1 color 0 key 0- Init START"),
    ("host:12:34 [0] NCCL INFO [Rank 0] ncclCommInitRankConfig comm 0x6 rank 0 nranks 2 cudaDev 0 nvmlDev 0 "
    "busId 7000 commId 0x99 - Init START"),
    "host:12:34 [0] NCCL INFO Ring 00 : 0[7000] -> 1[8000] via P2P/IPC",
    "host:12:34 [0] NCCL INFO Channel 00 : 0[7000] -> 1[8000] via direct shared memory",
    "host:12:34 [0] NCCL INFO Channel 00/1 : 0[0] -> 1[1] [send] via NET/IBext_v8/4/GDRDMA",
    "host:12:34 [0] NCCL INFO Channel 00/08 :    0   5   4   7   6   3   2   1   8  13  12  15  14  11  10   9",
    ("host:12:34 [0] NCCL INFO Pattern 4, crossNic 0, nChannels 2, speed 20.000000/20.000000, type NVL/PIX, "
    "sameChannels 1"),
    "host:12:34 [0] NCCL INFO Trees [0] 14/-1/-1->12->11 [1] 14/4/-1->12->-1",
    ("host:12:34 [0] NCCL INFO AllReduce: opCount 139d sendbuff 0x78d0 recvbuff 0x78d0 count 7382228 "
    "datatype 7 op 0 root 0 comm 0x78cf [nranks=128] stream 0x78d0"),
    "host:12:34 [0] NCCL INFO Init timings: rank 0 nranks 2 total 0.50 (kernels 0.1, bootstrap 0.1, allgathers 0.0)",
    "host:12:34 [0] NCCL INFO 1024 Bytes -> Algo 1 proto 2 time 12.5",
    "host:12:34 [0] NCCL INFO NCCL_IB_TIMEOUT set by environment to 22.",
    ("[rank1]:[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629] [Rank 1] Watchdog caught collective "
    "operation timeout: WorkNCCL(SeqNum=126, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
    "ran for 600012 milliseconds before timing out."),
    ("[E ProcessGroupNCCL.cpp:474] [Rank 0] Timeout at NCCL work: 126, last enqueued NCCL work: 131, last "
    "completed NCCL work: 125."),
    ("RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running collective: "
    "CollectiveFingerPrint(SequenceNumber=3, OpType=ALLREDUCE), but Rank 1 is running collective: "
    "CollectiveFingerPrint(SequenceNumber=3, OpType=BROADCAST)."),
    "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error",
]


@functools.cache
def seed_lines(kind: str = "all") -> tuple[str, ...]:
    """Real lines: ``nccl`` (NCCL log lines), ``torch`` (the rest of stdout/stderr), ``jsonl``, ``env``,
    ``ras`` (whole RAS text answers), or ``all``."""
    out: dict[str, list[str]] = {"nccl": [], "torch": [], "jsonl": [], "env": [], "ras": []}
    out["nccl"] += [s for s in VERSION_SEEDS if "NCCL " in s]
    out["torch"] += [s for s in VERSION_SEEDS if "NCCL " not in s or "Rank" in s]
    for p in sorted(f for root in (CORPUS, SAMPLES) if root.exists() for f in root.rglob("*")):
        if not p.is_file() or p.stat().st_size > 2_000_000:
            continue
        n = p.name
        text = p.read_bytes().decode("utf-8", "replace")
        if n.endswith(".jsonl"):
            out["jsonl"] += text.splitlines()
        elif n in ("env.txt", "exit.txt"):
            out["env"] += text.splitlines()
        elif n == "ras_verbose.txt":
            out["ras"].append(text)
        elif n.endswith(".log"):
            for ln in text.splitlines():
                (out["nccl"] if "NCCL " in ln else out["torch"]).append(ln)
    for k in out:
        out[k] = sorted(set(out[k]))[:4000] if k != "ras" else out[k]
    if kind == "all":
        return tuple(sorted({x for k in ("nccl", "torch", "jsonl", "env") for x in out[k]}))
    return tuple(out[kind])


def corpus_file(*names: str) -> bytes | None:
    """The first file of one of these names in a corpus run, else in a sample run."""
    for root in (CORPUS, SAMPLES):
        for n in names:
            for p in sorted(root.glob(f"*/{n}")):
                return p.read_bytes()
    return None


JUNK = ["\x00", "\r", "\r\n", "\ufffd", "\x1b[31m", "\u202e", "💥", "\t", " ", "]", "[", "(", ")", ":", "/", "-1",
        "0x", "99999999999999999999999", "-2147483649", "NaN", "Infinity", "nccl", "NCCL INFO ", "NCCL WARN ",
        "comm ", "rank ", "nranks ", "Init COMPLETE", "[rank0]:", "Traceback (most recent call last)", '"', "{", "}",
        "\\", "%s%n", "\xff\xfe"]


def mutate(rng: random.Random, line: str, others: tuple[str, ...] = ()) -> str:
    """One to three random edits of ``line``."""
    for _ in range(rng.randint(1, 3)):
        op = rng.randrange(10)
        i = rng.randint(0, len(line))
        if op == 0:  # truncated mid-line
            line = line[:i]
        elif op == 1:  # junk inserted
            line = line[:i] + rng.choice(JUNK) + line[i:]
        elif op == 2:  # a character replaced
            line = line[:i] + chr(rng.choice([0, 10, 13, 32, 48, 57, 65, 91, 93, 0xFFFD, rng.randrange(1, 0x3000)])) \
                + line[i + 1:]
        elif op == 3:  # a number made huge, negative or empty
            digits = [k for k, c in enumerate(line) if c.isdigit()]
            if digits:
                k = rng.choice(digits)
                line = line[:k] + rng.choice(["9" * rng.randint(10, 40), "-", "", "0x7fffffffffffffff"]) + line[k + 1:]
        elif op == 4 and others:  # two lines spliced (interleaved output of two ranks)
            other = rng.choice(others)
            line = line[:i] + other[rng.randint(0, len(other)):]
        elif op == 5:  # a token repeated
            toks = line.split(" ")
            if toks:
                t = rng.randrange(len(toks))
                toks[t:t] = [toks[t]] * rng.randint(1, 50)
                line = " ".join(toks)
        elif op == 6:  # invalid UTF-8 as ingest decodes it
            raw = line.encode("utf-8", "surrogatepass")
            j = rng.randint(0, len(raw))
            line = (raw[:j] + bytes(rng.randrange(128, 256) for _ in range(rng.randint(1, 4))) + raw[j:]).decode(
                "utf-8", "replace")
        elif op == 7:  # CRLF / stray CR
            line = line + "\r" if rng.random() < 0.5 else line.replace(" ", "\r", 1)
        elif op == 8:  # a segment deleted
            j = rng.randint(i, len(line))
            line = line[:i] + line[j:]
        else:  # a segment swapped to the front
            line = line[i:] + line[:i]
    return line


def mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    """Byte-level edits for binary formats (pickle, XML, JSON): flips, cuts, insertions, length blow-ups."""
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        if not b:
            b = bytearray(rng.randbytes(rng.randint(1, 64)))
        op = rng.randrange(6)
        i = rng.randrange(len(b))
        if op == 0:
            b[i] = rng.randrange(256)
        elif op == 1:
            del b[rng.randint(0, len(b)):]
        elif op == 2:
            b[i:i] = rng.randbytes(rng.randint(1, 8))
        elif op == 3:
            b[i:i + 4] = rng.choice([b"\xff\xff\xff\x7f", b"\x00\x00\x00\x80", b"\xff\xff\xff\xff"])
        elif op == 4:
            j = rng.randint(i, min(len(b), i + 64))
            b[i:i] = b[i:j] * rng.randint(1, 8)
        else:
            del b[i:rng.randint(i, min(len(b), i + 32))]
    return bytes(b)


def random_json(rng: random.Random, depth: int = 0) -> object:
    """A JSON value of random shape, biased towards the keys the parsers look for."""
    keys = ["entries", "pg_status", "pg_config", "version", "communicators", "ranks", "missing_ranks", "rank",
            "collective_counts", "nccl_version", "results", "size", "time", "alg_bw", "bus_bw", "in_place",
            "out_of_place", "type", "seq", "op_type", "pg", "t", "pgs", "where", "world", "pid", "host", "code",
            "collective_seq_id", "p2p_seq_id", "input_sizes", "input_dtypes", "state", "process_group",
            "duration_ms", "frames", "last_enqueued_collective", "is_p2p", "active_duration", "numel", "dur_ms"]
    r = rng.random()
    if depth > 4 or r < 0.35:
        return rng.choice([None, True, False, 0, -1, 2**63, 1.5, float("inf"), float("nan"), "", "x", "0",
                           "nccl:all_reduce", "1:00:00", "999999999999 days, 0:00:00", [], {}, "[0, 1]",
                           rng.randint(-10, 10**6)])
    if r < 0.6:
        return [random_json(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {rng.choice(keys) if rng.random() < 0.8 else str(rng.randint(0, 5)): random_json(rng, depth + 1)
            for _ in range(rng.randint(0, 6))}


def dumps_json(obj: object) -> str:
    return json.dumps(obj, allow_nan=True)


def run_fuzz(name: str, one: Callable[[random.Random], None], argv: list[str] | None = None) -> int:
    """Call ``one(rng)`` with fresh randomness until the time is up; report inputs tried and crashes.

    ``one`` builds an input, feeds the target, and lets any unexpected exception escape.
    """
    ap = argparse.ArgumentParser(description=f"fuzz the {name} parser")
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--max-crashes", type=int, default=5)
    a = ap.parse_args(argv)
    seed = a.seed if a.seed is not None else random.SystemRandom().randrange(2**32)
    master = random.Random(seed)
    deadline = time.monotonic() + a.seconds
    tried = 0
    crashes: list[str] = []
    slowest, slowest_seed = 0.0, None
    while time.monotonic() < deadline and len(crashes) < a.max_crashes:
        s = master.randrange(2**63)
        t0 = time.perf_counter()
        try:
            one(random.Random(s))
        except Exception:  # noqa: BLE001 - that is what we are looking for
            crashes.append(f"--- input seed {s}\n{traceback.format_exc()}")
        dt = time.perf_counter() - t0
        if dt > slowest:
            slowest, slowest_seed = dt, s
        tried += 1
    print(f"{name}: {tried} inputs in {a.seconds:.0f} s (seed {seed}), slowest {slowest * 1e3:.1f} ms "
          f"(input seed {slowest_seed}), "
          f"{len(crashes)} crashes")
    for c in crashes:
        print(c)
    return 1 if crashes else 0


def analyze_parsed(parsed: list) -> dict:
    """Build the run, run every detector, decide, render JSON and text; raise on any internal failure."""
    import io

    from rich.console import Console

    from ncclscope.analysis import analyze_run
    from ncclscope.model_build import build_run
    from ncclscope.report import render_text, to_json

    a = analyze_run(build_run(parsed))
    internal = [f.message for f in a.findings if f.kind == "internal"]
    if internal:
        raise AssertionError("a detector failed: " + "; ".join(internal))
    out = to_json(a)
    json.dumps(out, default=str)
    render_text(a, Console(file=io.StringIO(), width=120))
    return out
