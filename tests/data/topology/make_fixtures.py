"""Writes the multi-node topology fixtures of this folder (run from the repository root:
``python tests/data/topology/make_fixtures.py``). Each case follows the line forms of one NCCL
release and the layout of one public thread (see its SOURCE.md); hosts, pids, pointers, bus ids and
ids are our own. EXPECTED.json holds the topology facts each case must give."""
from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
BUS = ["07000", "0f000", "47000", "4e000", "87000", "90000", "b7000", "bd000"]


def ring(n: int, ch: int) -> list[int]:
    return list(range(n)) if ch % 2 == 0 else [0, *range(n - 1, 0, -1)]


def tree(r: int, per: int) -> tuple[int, tuple[int, int, int]]:
    """(up, downs) of rank r: a chain inside each node, node heads under rank 0."""
    node, local = divmod(r, per)
    up = r - 1 if local else (-1 if node == 0 else 0)
    d0 = r + 1 if local < per - 1 else -1
    d1 = per if r == 0 else -1
    return up, (d0, d1, -1)


def links(n: int, per: int, ch: int) -> list[tuple[int, int, bool]]:
    order = ring(n, ch)
    return [(a, b, a // per != b // per) for a, b in zip(order, order[1:] + order[:1])]


class Proc:
    def __init__(self, host: str, pid: int, dev: int, prefix: str = "", ts: str | None = None) -> None:
        self.host, self.pid, self.dev, self.prefix, self.ts, self.tid = host, pid, dev, prefix, ts, pid
        self.lines: list[str] = []

    def info(self, msg: str, tid: int | None = None, dev: int | None = None) -> None:
        t = f"[{self.ts}] " if self.ts else ""
        self.lines.append(f"{self.prefix}{t}{self.host}:{self.pid}:{tid or self.tid} [{self.dev if dev is None else dev}] "
                          f"NCCL INFO {msg}")


def interleave(procs: list[Proc]) -> list[str]:
    out: list[str] = []
    for i in range(max(len(p.lines) for p in procs)):
        out += [p.lines[i] for p in procs if i < len(p.lines)]
    return out


def case_24() -> tuple[dict[str, list[str]], dict]:
    """2.4.8, 32 ranks on 2 nodes, a process per GPU, mpirun's output one file per node, no commIds."""
    n, per = 32, 16
    files: dict[str, list[str]] = {}
    for node, host in enumerate(("dgx-n01", "dgx-n02")):
        procs = []
        for local in range(per):
            r = node * per + local
            p = Proc(host, 7301 + local + 40 * node, local)
            p.info("Bootstrap : Using [0]ib0:10.31.0.%d<0>" % (11 + node))
            p.info("NET/Plugin : No plugin found (libnccl-net.so).")
            p.info("NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.31.0.%d<0>" % (11 + node))
            p.lines.append("NCCL version 2.4.8+cuda10.1") if r == 0 else None
            p.info(f"comm 0x7f{r:02x}5c001f20 rank {r} nranks {n} cudaDev {local} nvmlDev {local}", tid=p.pid + 5)
            if r == 0:
                for ch in range(2):
                    p.info(f"Channel {ch:02d} : " + " ".join(f"{x:>3}" for x in ring(n, ch)), tid=p.pid + 5)
            if r != 17:  # rank 17's Trees line is missing: its parent's line still gives the edge
                up, downs = tree(r, per)
                p.info(f"Trees [0] {up}->{r}->{downs[0]}/{downs[1]}/{downs[2]} [1] {up}->{r}->{downs[0]}/{downs[1]}/{downs[2]}",
                       tid=p.pid + 5)
            for ch in range(2):
                for a, b, net in links(n, per, ch):
                    if net and a == r:
                        p.info(f"Ring {ch:02d} : {a} -> {b} [send] via NET/IB/0/GDRDMA", tid=p.pid + 5)
                    elif net and b == r:
                        p.info(f"Ring {ch:02d} : {a} -> {b} [receive] via NET/IB/0/GDRDMA", tid=p.pid + 5)
                    elif a == r:
                        p.info(f"Ring {ch:02d} : {a}[{local}] -> {b}[{b % per}] via P2P/IPC", tid=p.pid + 5)
            p.info(f"comm 0x7f{r:02x}5c001f20 rank {r} nranks {n} cudaDev {local} nvmlDev {local} - Init COMPLETE",
                   tid=p.pid + 5)
            procs.append(p)
        files[f"{host}.out"] = interleave(procs)
    return files, {"world_size": 32, "nodes": 2, "nccl_version": "2.4.8", "n_channels": 2, "ring0": ring(n, 0),
                   "transports": ["NET/IB", "P2P/IPC"], "tree_edges": [[0, 1], [0, 16], [16, 17], [17, 18], [30, 31]],
                   "communicators": 1}


def case_256() -> tuple[dict[str, list[str]], dict]:
    """2.5.6, 16 ranks on 2 nodes, one file per rank with the launcher's "[rank] " label, no commIds."""
    n, per = 16, 8
    files: dict[str, list[str]] = {}
    for r in range(n):
        node, local = divmod(r, per)
        p = Proc(f"train-ib-{node:02d}", 5120 + local, local, prefix=f"[{r}] ")
        p.info("Bootstrap : Using [0]eth0:10.64.2.%d<0>" % (40 + node))
        p.info("NET/IB : Using [0]mlx5_1:1/IB [1]mlx5_3:1/IB ; OOB eth0:10.64.2.%d<0>" % (40 + node))
        if r == 0:
            p.lines.append("[0] NCCL version 2.5.6+cuda10.2")
            for ch in range(2):
                p.info(f"Channel {ch:02d}/02 : " + " ".join(f"{x:>3}" for x in ring(n, ch)), tid=p.pid + 170)
        up, (d0, d1, d2) = tree(r, per)
        p.info(" ".join(["Trees"] + [f"[{c}] {d0}/{d1}/{d2}->{r}->{up}|{up}->{r}->{d0}/{d1}/{d2}" for c in range(2)]),
               tid=p.pid + 170)
        for ch in range(2):
            for a, b, net in links(n, per, ch):
                if net and a == r:
                    p.info(f"Ring {ch:02d} : {a}[{BUS[a % per]}] -> {b}[{BUS[b % per]}] [send] via NET/IB/0/GDRDMA",
                           tid=p.pid + 170)
                elif net and b == r:
                    p.info(f"Ring {ch:02d} : {a}[{BUS[a % per]}] -> {b}[{BUS[b % per]}] [receive] via NET/IB/0/GDRDMA",
                           tid=p.pid + 170)
                elif a == r:
                    p.info(f"Ring {ch:02d} : {a}[{BUS[a % per]}] -> {b}[{BUS[b % per]}] via P2P/IPC", tid=p.pid + 170)
        p.info(f"comm 0x55{r:02x}a0c13e70 rank {r} nranks {n} cudaDev {local} busId {BUS[local]} - Init COMPLETE",
               tid=p.pid + 170)
        files[f"rank{r:02d}.log"] = p.lines
    return files, {"world_size": 16, "nodes": 2, "nccl_version": "2.5.6", "n_channels": 2, "ring0": ring(n, 0),
                   "transports": ["NET/IB", "P2P/IPC"], "tree_edges": [[0, 1], [0, 8], [8, 9], [14, 15]],
                   "communicators": 1}


def case_2103_tests() -> tuple[dict[str, list[str]], dict]:
    """2.10.3 under nccl-tests, one process per node driving 8 GPUs, NCCL lines between the table's."""
    n, per = 16, 8
    files: dict[str, list[str]] = {}
    for node, host in enumerate(("gpu-r1", "gpu-r2")):
        pid = 26410 + 3000 * node
        out = ["# nThread 1 nGpus 8 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 "
               "agg iters: 1 validation: 1 graph: 0", "#", "# Using devices"]
        out += [f"#  Rank {node * per + d:2d} Group  0 Pid {pid:6d} on {host:>8} device  {d} [0x{BUS[d][:2]}] "
                "NVIDIA A800-SXM4-80GB" for d in range(per)]
        p = Proc(host, pid, 0)
        p.info("Bootstrap : Using bond0:10.8.1.%d<0>" % (21 + node))
        p.info("NET/IB : Using [0]mlx5_6:1/RoCE ; OOB bond0:10.8.1.%d<0>" % (21 + node))
        if node == 0:
            p.lines.append("NCCL version 2.10.3+cuda11.4")
        for d in range(per):
            r = node * per + d
            tid = pid + 180 + d
            if r == 0:
                for ch in range(2):
                    p.info(f"Channel {ch:02d}/02 : " + " ".join(f"{x:>3}" for x in ring(n, ch)), tid=tid, dev=d)
            up, (d0, d1, d2) = tree(r, per)
            p.info(f"Trees [0] {d0}/{d1}/{d2}->{r}->{up} [1] {d0}/{d1}/{d2}->{r}->{up}", tid=tid, dev=d)
            for ch in range(2):
                for a, b, net in links(n, per, ch):
                    if net and (a == r or b == r):
                        kind = "send" if a == r else "receive"
                        p.info(f"Channel {ch:02d} : {a}[{BUS[a % per]}] -> {b}[{BUS[b % per]}] [{kind}] via NET/IB/0",
                               tid=tid, dev=d)
                    elif a == r:
                        p.info(f"Channel {ch:02d} : {a}[{BUS[a % per]}] -> {b}[{BUS[b % per]}] via P2P/IPC/read",
                               tid=tid, dev=d)
            p.info(f"comm 0x7f{d:x}c8000e30 rank {r} nranks {n} cudaDev {d} busId {BUS[d]} - Init COMPLETE", tid=tid, dev=d)
        out += p.lines
        out += ["#", "#                                                              out-of-place                       in-place",
                "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
                "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)"]
        for i, size in enumerate((8, 1024, 1048576, 134217728)):
            t = 31.4 + i * 400
            bw = size / t / 1e3
            out.append(f"{size:>12} {size // 4:>13}     float     sum      -1 {t:8.2f} {bw:7.2f} {bw * 1.875:7.2f}      0 "
                       f"{t + 1:8.2f} {bw:7.2f} {bw * 1.875:7.2f}      0")
        files[f"all_reduce_perf.{host}.txt"] = out
    return files, {"world_size": 16, "nodes": 2, "nccl_version": "2.10.3", "n_channels": 2, "ring0": ring(n, 0),
                   "transports": ["NET/IB", "P2P/IPC"], "tree_edges": [[0, 1], [0, 8], [8, 9]], "communicators": 1,
                   "nccl_tests_rows": 16}


def _modern(n: int, per: int, ranks: range, version: str, cid: str, nch: int, ts: bool) -> dict[str, list[str]]:
    files: dict[str, list[str]] = {}
    for r in ranks:
        node, local = divmod(r, per)
        p = Proc(f"hpc-{node + 3:03d}", 18800 + local, local,
                 ts=f"2026-10-02 07:41:{10 + local:02d}.{r:06d}" if ts else None)
        p.info(f"NCCL version {version}+cuda12.8") if ts else None
        if not ts and local == 0:
            p.lines.append(f"NCCL version {version}+cuda12.4")
        p.info("NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB ib0:10.90.%d.%d<0>" % (node, local + 1))
        call = "ncclCommInitRankConfig" if ts else "ncclCommInitRank"
        head = (f"{call} comm 0x5600{r:02x}a1b2c0 rank {r} nranks {n} cudaDev {local} nvmlDev {local} busId {BUS[local]} "
                f"commId {cid}")
        p.info(head + " - Init START", tid=p.pid)
        p.info(f"comm 0x5600{r:02x}a1b2c0 rank {r} nRanks {n} nNodes {n // per} localRanks {per} localRank {local} MNNVL 0",
               tid=p.pid + 60)
        if r == 0:
            for ch in range(nch):
                p.info(f"Channel {ch:02d}/{nch:02d} : " + " ".join(f"{x:>3}" for x in ring(n, ch)), tid=p.pid + 60)
        up, (d0, d1, d2) = tree(r, per)
        p.info(" ".join(["Trees"] + [f"[{c}] {d0}/{d1}/{d2}->{r}->{up}" for c in range(nch)]), tid=p.pid + 60)
        for ch in range(nch):
            for a, b, net in links(n, per, ch):
                if net and (a == r or b == r):
                    kind = "send" if a == r else "receive"
                    p.info(f"Channel {ch:02d}/0 : {a}[{a % per}] -> {b}[{b % per}] [{kind}] via NET/IB/{ch % 2}/GDRDMA",
                           tid=p.pid + 61)
                elif a == r:
                    p.info(f"Channel {ch:02d}/0 : {a}[{a % per}] -> {b}[{b % per}] via P2P/CUMEM/read", tid=p.pid + 61)
        p.info(head + " - Init COMPLETE", tid=p.pid)
        files[f"{p.host}.{p.pid}.nccl.log"] = p.lines
    return files


def case_2215_half() -> tuple[dict[str, list[str]], dict]:
    """2.21.5, 16 ranks on 2 nodes, but only the first node's 8 rank logs: NCCL's nNodes says 2."""
    files = _modern(16, 8, range(8), "2.21.5", "0x3c1e77d0a95b6f21", 4, ts=False)
    return files, {"world_size": 16, "nodes": 2, "hosts": 1, "nccl_version": "2.21.5", "n_channels": 4,
                   "ring0": ring(16, 0), "transports": ["NET/IB", "P2P/CUMEM"], "tree_edges": [[0, 1], [0, 8], [6, 7]],
                   "communicators": 1}


def case_2293() -> tuple[dict[str, list[str]], dict]:
    """2.29.3 with NCCL_DEBUG_TIMESTAMP_FORMAT, 16 ranks on 2 nodes, one log per rank."""
    files = _modern(16, 8, range(16), "2.29.3", "0x9a04d2f1c6e83b57", 4, ts=True)
    return files, {"world_size": 16, "nodes": 2, "hosts": 2, "nccl_version": "2.29.3", "n_channels": 4,
                   "ring0": ring(16, 0), "transports": ["NET/IB", "P2P/CUMEM"],
                   "tree_edges": [[0, 1], [0, 8], [8, 9], [14, 15]], "communicators": 1}


CASES = {"nccl248_ib_32ranks_2nodes": case_24, "nccl256_ib_16ranks_rank_files": case_256,
         "nccl2103_roce_nccl_tests_2nodes": case_2103_tests, "nccl2215_ib_half_of_16ranks": case_2215_half,
         "nccl2293_ib_16ranks_timestamps": case_2293}

if __name__ == "__main__":
    expected = {}
    for name, make in CASES.items():
        files, facts = make()
        folder = HERE / name
        folder.mkdir(exist_ok=True)
        for fname, lines in files.items():
            (folder / fname).write_text("\n".join(lines) + "\n")
        expected[name] = facts
    (HERE / "EXPECTED.json").write_text(json.dumps(expected, indent=1) + "\n")
