"""Pasted excerpts: the few lines a user has when a job hung at start-up, in the forms PyTorch, NCCL and
nccl-tests print them, with and without the fault, for the accuracy matrix (``benchmarks/synth_matrix.py``).

Kinds (``EXCERPTS``):
- ``store_barrier``: init_process_group's store-based barrier; hang: ``missing`` ranks never arrive and the
  others keep waiting (repeated lines, ``worker_count`` below the world); fault-free: one round of waits, as
  every start prints.
- ``unique_id``: a rank's store wait for the NCCL unique id its group's root (rank 0) publishes at the first
  collective; hang only (a fault-free job prints nothing of it).
- ``heartbeat``: PyTorch's heartbeat monitor on the ranks whose watchdog is stuck; hang only.
- ``nccl_tests``: an nccl-tests run; hang: header, NCCL init, the table header and no row; fault-free: rows and
  the passing summary.
- ``after_init``: one host's NCCL init (Init START / COMPLETE on every rank); "hang": the log ends there;
  fault-free: training lines follow. A log that ends right at init's end shows a normal start and nothing
  else (a healthy log cut by the user there is the same text), so what the text supports is healthy, certainty
  possible, saying what the input covers (``rules.healthy.start_only``); both forms read healthy.
- ``partial_init``: NCCL init of a job over 2 to 4 hosts, each host's lines behind pdsh's ``host: `` prefix or
  bare; the ranks of one host print Init START and their channels but no Init COMPLETE, the others complete, and
  the log ends; hang only, the culprits the ranks still in init.

Each writer returns ``(verdict, culprit ranks)``: what an analyser should conclude from the text alone.
"""
from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

Truth = tuple[str, tuple[int, ...]]


def _store_barrier(dest: Path, nranks: int, hang: bool, rng: random.Random) -> Truth:
    missing = sorted(rng.sample(range(nranks), rng.randint(1, max(1, nranks // 4)))) if hang else []
    arrived = [r for r in range(nranks) if r not in missing]
    count = len(arrived) if hang else rng.randint(1, nranks - 1)
    rounds = rng.randint(2, 4) if hang else 1
    shown = arrived if hang else rng.sample(range(nranks), count)
    lines = [f"initializing ddp: GLOBAL_RANK: {r}, MEMBER: {r + 1}/{nranks}\n" for r in range(nranks)]
    for _ in range(rounds):
        order = list(shown)
        rng.shuffle(order)
        lines += [f"INFO:root:Waiting in store based barrier to initialize process group for rank: {r}, key: "
                  f"store_based_barrier_key:1 (world_size={nranks}, worker_count={count}, timeout=0:30:00)\n"
                  for r in order]
    (dest / "ddp.log").write_text("".join(lines))
    return ("hang", tuple(missing)) if hang else ("unknown", ())


def _unique_id(dest: Path, nranks: int, hang: bool, rng: random.Random) -> Truth:
    waiter = rng.randrange(1, nranks)
    old = rng.random() < 0.5
    spelled = "retreiving" if old else "retrieving"
    err = ("Timeout waiting for key: default_pg/0/0 after 1800000 ms" if old else
           "wait timeout after 600000ms, keys: /default_pg/0//cuda//0")
    exc = "RuntimeError" if old else "torch.distributed.DistBackendError"
    text = (f"[rank{waiter}]: Traceback (most recent call last):\n"
            f'[rank{waiter}]:   File "/workspace/train.py", line 51, in <module>\n'
            f"[rank{waiter}]:     model = DDP(model, device_ids=[local_rank])\n"
            f"[rank{waiter}]: {exc}: [{waiter}] is setting up NCCL communicator and {spelled} ncclUniqueId from [0] via "
            f"c10d key-value store by key '0', but store->get('0') got error: {err}\n")
    (dest / "train.log").write_text(text)
    return "hang", (0,)


def _heartbeat(dest: Path, nranks: int, hang: bool, rng: random.Random) -> Truth:
    ranks = sorted(rng.sample(range(nranks), rng.randint(1, nranks)))
    lines = [f"[rank{r}]:[E{rng.randint(101, 1228)} 10:{rng.randint(10, 59)}:07.{rng.randint(100000, 999999)}000 "
             f"ProcessGroupNCCL.cpp:1316] [PG ID 0 PG GUID 0(default_pg) Rank {r}] Heartbeat monitor timed out! Process "
             f"will be terminated after dumping debug info. workMetaList_.size()={rng.randint(1, 200)}\n" for r in ranks]
    (dest / "train.log").write_text("".join(lines))
    return "hang", ()


def _nccl_tests(dest: Path, nranks: int, hang: bool, rng: random.Random) -> Truth:
    host, pid = f"bench{rng.randint(1, 99):02d}", rng.randint(1000, 99999)
    n = min(nranks, 8)  # -g N: one process, N GPUs
    head = (f"# nThread 1 nGpus {n} minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 "
            "agg iters: 1 validation: 1 graph: 0\n")
    lines = [head, "#\n", "# Using devices\n"]
    lines += [f"#  Rank {r:2d} Group  0 Pid {pid:6d} on {host:>10s} device {r:2d} [0x{16 + r:02x}] NVIDIA A100-SXM4-80GB\n"
              for r in range(n)]
    lines.append(f"{host}:{pid}:{pid} [0] NCCL INFO NCCL version 2.19.3+cuda12.3\n")
    comm = rng.getrandbits(63) | 1 << 60
    lines += [f"{host}:{pid}:{pid + 10 + r} [{r}] NCCL INFO comm 0x55{r:02x}c8a0 rank {r} nranks {n} cudaDev {r} nvmlDev "
              f"{r} busId {16 + r:x}000 commId 0x{comm:x} - Init COMPLETE\n" for r in range(n)]
    places = "#" + " " * 62 + "out-of-place" + " " * 23 + "in-place\n"
    columns = "#       size         count      type   redop    root" + "     time   algbw   busbw #wrong" * 2 + "\n"
    lines += ["#\n", places, columns]
    if not hang:
        for size in (8, 1024, 1048576, 134217728, 1073741824):
            algbw = 130.0 * size / (size + 4e6) + 1e-3  # GB/s: an NVLink A100 node's curve, latency-bound when small
            t = max(10.0, size / (algbw * 1e3))  # us
            algbw = size / (t * 1e3)
            bus = algbw * 2 * (n - 1) / n
            lines.append(f"{size:12d} {size // 4:13d}     float     sum      -1  {t:9.2f}  {algbw:7.2f}  {bus:7.2f}      0"
                         f"  {t:9.2f}  {algbw:7.2f}  {bus:7.2f}      0\n")
        lines += ["# Out of bounds values : 0 OK\n", "# Avg bus bandwidth    : 42.0\n", "#\n"]
    (dest / "all_reduce.txt").write_text("".join(lines))
    return ("hang", ()) if hang else ("healthy", ())


def _after_init(dest: Path, nranks: int, hang: bool, rng: random.Random) -> Truth:
    """NCCL 2.18-style init of every rank of one host's log; hang: nothing after it; fault-free: the training
    loop's lines follow (a log that goes on past init)."""
    host, base = f"node{rng.randint(0, 99):02d}", rng.randint(1000, 90000)
    comm = rng.getrandbits(63) | 1 << 60
    n = min(nranks, 8)
    lines = [f"{host}:{base}:{base} [0] NCCL INFO Bootstrap : Using eth0:10.1.0.{rng.randint(2, 250)}<0>\n",
             "NCCL version 2.18.5+cuda12.2\n"]
    for phase in ("Init START", "Init COMPLETE"):
        lines += [f"{host}:{base + r}:{base + 100 + r} [{r}] NCCL INFO ncclCommInitRank comm 0x55{r:02x}0c8a0 rank {r} "
                  f"nranks {n} cudaDev {r} nvmlDev {r} busId {16 + r:x}000 commId 0x{comm:x} - {phase}\n" for r in range(n)]
    if not hang:
        lines += [f"Epoch 0 step {s} loss {2.5 - s * 0.01:.3f}\n" for s in range(rng.randint(1, 5))]
    (dest / "train.log").write_text("".join(lines))
    return ("healthy", ())  # what the text shows: a normal start (module docstring)


def _partial_init(dest: Path, nranks: int, hang: bool, rng: random.Random) -> Truth:
    """NCCL 2.18-style init over several hosts; the ranks of one host never reach Init COMPLETE."""
    hosts = rng.randint(2, 4)
    per = max(1, min(8, nranks // hosts))
    n, comm, prefixed = hosts * per, rng.getrandbits(63) | 1 << 60, rng.random() < 0.5
    stuck_host = rng.randrange(hosts)
    base = rng.randint(1000, 90000)

    def line(r: int, msg: str) -> str:
        h = f"gpu{r // per:02d}"
        return f"{h + ': ' if prefixed else ''}{h}:{base + r}:{base + 100 + r} [{r % per}] NCCL INFO {msg}\n"

    def init(r: int, phase: str) -> str:
        return line(r, f"ncclCommInitRank comm 0x55{r:02x}0c8a0 rank {r} nranks {n} cudaDev {r % per} nvmlDev {r % per} "
                    f"busId {16 + r % per:x}000 commId 0x{comm:x} - {phase}")

    lines = ["NCCL version 2.18.5+cuda12.2\n"] + [init(r, "Init START") for r in range(n)]
    lines += [line(r, f"Channel 00/0 : {r}[{r % per}] -> {(r + 1) % n}[{(r + 1) % per}] via P2P/IPC") for r in range(n)]
    done = [r for r in range(n) if r // per != stuck_host]
    lines += [line(r, "Connected all rings") for r in done] + [init(r, "Init COMPLETE") for r in done]
    (dest / "job.log").write_text("".join(lines))
    return "hang", tuple(r for r in range(n) if r // per == stuck_host)


EXCERPTS: dict[str, tuple[Callable[[Path, int, bool, random.Random], Truth], bool]] = {
    # kind -> (writer, whether it has a fault-free form)
    "store_barrier": (_store_barrier, True),
    "unique_id": (_unique_id, False),
    "heartbeat": (_heartbeat, False),
    "nccl_tests": (_nccl_tests, True),
    "after_init": (_after_init, True),
    "partial_init": (_partial_init, False),
}


def write_excerpt(dest: Path | str, kind: str, nranks: int, hang: bool, seed: int = 0) -> Truth:
    """Write one excerpt of ``kind`` into the folder ``dest`` (created); its (verdict, culprits)."""
    if kind not in EXCERPTS:
        raise ValueError(f"kind must be one of {sorted(EXCERPTS)}")
    writer, has_healthy = EXCERPTS[kind]
    if not hang and not has_healthy:
        raise ValueError(f"{kind} has no fault-free form")
    if nranks < 2:
        raise ValueError("nranks must be at least 2")
    d = Path(dest)
    d.mkdir(parents=True, exist_ok=True)
    return writer(d, nranks, hang, random.Random(seed))
