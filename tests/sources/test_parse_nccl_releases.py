"""NCCL's line forms by release, 2.2 to 2.32, as its INFO / WARN format strings print them (read from
NCCL's source history: debug.cc / debug.h heads, init.cc Init and Trees lines, rings.cc channel
orders, transport/*.cc connection lines, socket and IB messages). Host names, pids, addresses and
numbers are our own. Most forms here were not read before (2.2 / 2.3 heads and messages, 2.4's
phaseless Init, ring orders and trees, bracketless NET hops, empty hosts, headless pastes); the rest
(2.5+ forms) are held here so that they stay read."""
from __future__ import annotations

import time

import pytest

from ncclscope.sources import records as R
from ncclscope.sources.nccl_log import parse_nccl_line

H = "gpu-a07:41022:41022 [3]"  # the usual head
CASES = [
    # (release, line, record type, fields)
    ("2.2", "gpu-a07:41022:41022 [0] INFO NET : Using interface ib0:10.7.0.11<0>",
     R.NcclNet, {"kind": "socket", "value": "ib0:10.7.0.11<0>", "host": "gpu-a07", "pid": 41022}),
    ("2.2", "gpu-a07:41022:41022 [0] include/socket.h:360 WARN Net : Connect to 10.7.0.12<39451> failed : No route to host",
     R.NcclWarn, {"source": "include/socket.h:360", "message": "Net : Connect to 10.7.0.12<39451> failed : No route to host"}),
    ("2.2", "gpu-a07:41022:41022 [0] INFO comm 0x7f3c5c001f20 rank 0 nranks 4",
     R.NcclInit, {"comm": "0x7f3c5c001f20", "rank": 0, "nranks": 4, "cuda_dev": None, "phase": "SEEN"}),
    ("2.3", "gpu-a07:41022:41022 [0] NCCL INFO NET : Using interface lo:127.0.0.1<0>",
     R.NcclNet, {"kind": "socket", "value": "lo:127.0.0.1<0>"}),
    ("2.3", "gpu-a07:41022:41022 [0] NCCL INFO CUDA Dev 0, IP Interfaces : ib0(PHB) eth0(SOC)",
     R.NcclNet, {"kind": "interfaces", "value": "ib0(PHB) eth0(SOC)"}),
    ("2.3", "gpu-a07:41022:41022 [0] NCCL INFO comm 0x7f3c5c001f20 rank 2 nranks 16",
     R.NcclInit, {"rank": 2, "nranks": 16, "cuda_dev": None}),
    ("2.3", "gpu-a07:41022:41022 [0] NCCL INFO Ring 00 :    0   1   2   3",
     R.NcclRingOrder, {"channel": 0, "ranks": [0, 1, 2, 3], "nchannels": 0}),
    ("2.3", "gpu-a07:41022:41022 [0] NCCL INFO Ring 01 : 7 -> 0 via NET/IB/0/GDRDMA",
     R.NcclConnection, {"channel": 1, "src": 7, "dst": 0, "transport": "NET/IB"}),
    ("2.3", "gpu-a07:41022:41022 [0] NCCL INFO Ring 00 : 0[0] -> 1[1] via P2P/IPC",
     R.NcclConnection, {"src": 0, "dst": 1, "transport": "P2P/IPC"}),
    ("2.3", "gpu-a07:41022:41022 [0] NCCL INFO opCount 3f sendbuff 0x7f3c40000000 recvbuff 0x7f3c40000000 count 262144 "
            "size 1048576 datatype 7 op 0 comm 0x7f3c5c001f20 [nranks=4] stream 0x55d0",
     R.NcclColl, {"op": "unknown", "opcount": 0x3F, "count": 262144, "datatype": 7, "comm": "0x7f3c5c001f20", "nranks": 4}),
    ("2.3", "gpu-a07:41022:41022 [0] misc/utils.cu:41 NCCL WARN Cuda failure 'out of memory'",
     R.NcclWarn, {"source": "misc/utils.cu:41"}),
    ("2.4", f"{H} NCCL INFO Bootstrap : Using [0]ib0:10.7.0.11<0>", R.NcclNet, {"kind": "bootstrap", "value": "[0]ib0:10.7.0.11<0>"}),
    ("2.4", f"{H} NCCL INFO NET/Plugin : No plugin found (libnccl-net.so).", R.NcclNet, {"kind": "plugin"}),
    ("2.4", f"{H} NCCL INFO comm 0x5581c0a0 rank 3 nranks 32 cudaDev 3 nvmlDev 3",
     R.NcclInit, {"rank": 3, "nranks": 32, "cuda_dev": 3, "phase": "START", "comm_id": None}),
    ("2.4", f"{H} NCCL INFO comm 0x5581c0a0 rank 3 nranks 32 cudaDev 3 nvmlDev 3 - Init COMPLETE",
     R.NcclInit, {"rank": 3, "nranks": 32, "phase": "COMPLETE", "comm_id": None}),
    ("2.4", f"{H} NCCL INFO Channel 00 :    0   1   3   2   6   7   5   4",
     R.NcclRingOrder, {"channel": 0, "ranks": [0, 1, 3, 2, 6, 7, 5, 4], "nchannels": 0}),
    ("2.4", f"{H} NCCL INFO Ring 00 : 31 -> 0 [receive] via NET/IB/0",
     R.NcclConnection, {"src": 31, "dst": 0, "direction": "receive", "transport": "NET/IB"}),
    ("2.4", f"{H} NCCL INFO Trees [0] 2->3->-1/-1/-1 [1] -1->3->2/-1/-1",
     R.NcclTrees, {"rank": 3, "channels": [(0, (-1, -1, -1), 2), (1, (2, -1, -1), -1)]}),
    ("2.6", f"{H} NCCL INFO Ring 00 : 31[b2000] -> 0[3d000] [receive] via NET/IB/0",
     R.NcclConnection, {"src": 31, "dst": 0, "direction": "receive", "transport": "NET/IB"}),
    ("2.6", f"{H} NCCL INFO Trees [0] 4/-1/-1->3->2|2->3->4/-1/-1 [1] -1/-1/-1->3->4|4->3->-1/-1/-1",
     R.NcclTrees, {"rank": 3, "channels": [(0, (4, -1, -1), 2), (1, (-1, -1, -1), 4)]}),
    ("2.4", f"{H} init.cu:1197 NCCL WARN Mismatched collective detected, please check your collective calls at and "
            "around rank 3.", R.NcclWarn, {"source": "init.cu:1197"}),
    ("2.7", f"{H} transport/net_ib.cc:1009 NCCL WARN NET/IB : Got completion with error 12, opcode 1, len 0, vendor err 129",
     R.NcclWarn, {"source": "transport/net_ib.cc:1009",
                  "message": "NET/IB : Got completion with error 12, opcode 1, len 0, vendor err 129"}),
    ("2.9", f"{H} NCCL INFO Channel 00 : 3[3d000] -> 4[3e000] [send] via NET/AWS Libfabric/1/GDRDMA",
     R.NcclConnection, {"src": 3, "dst": 4, "transport": "NET/AWS Libfabric"}),
    ("2.19", ":41367:41367 [1] NCCL INFO NET/Socket : Using [0]eth0:10.7.0.13<0>",
     R.NcclNet, {"kind": "socket", "host": "", "pid": 41367}),
    ("2.21", "init.cc:1247 NCCL WARN Cuda failure 'invalid device ordinal'",
     R.NcclWarn, {"source": "init.cc:1247", "message": "Cuda failure 'invalid device ordinal'", "pid": 0}),
    ("2.21", "NCCL INFO Channel 00/02 :    0   1   2   3",
     R.NcclRingOrder, {"channel": 0, "nchannels": 2, "ranks": [0, 1, 2, 3], "pid": 0}),
    # GPU Direct RDMA: the /GDRDMA flag of a network channel kept (its transport is cut to NET/IB), and NCCL's own
    # word when it is off (NVIDIA/nccl#1412 shape)
    ("2.21", f"{H} NCCL INFO Channel 00/0 : 3[3d000] -> 11[3d000] [send] via NET/IB/0/GDRDMA",
     R.NcclConnection, {"transport": "NET/IB", "gdr": True}),
    ("2.21", f"{H} NCCL INFO Channel 00/0 : 3[3d000] -> 11[3d000] [send] via NET/IB/0",
     R.NcclConnection, {"transport": "NET/IB", "gdr": False}),
    ("2.18", f"{H} NCCL INFO Channel 01/0 : 3[3d000] -> 11[3d000] [receive] via NET/IB/2/GDRDMA(PXN)",
     R.NcclConnection, {"transport": "NET/IB", "gdr": True}),
    ("2.5", f"{H} NCCL INFO Ring 03 : 146[3d000] -> 155[3d000] [receive] via NET/IB/3/GDRDMA",
     R.NcclConnection, {"transport": "NET/IB", "gdr": True}),
    ("2.12", f"{H} NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0' (no module)",
     R.NcclNet, {"kind": "gdr_disabled"}),
    ("2.12", f"{H} NCCL INFO NET/IB : GPU Direct RDMA Disabled for GPU 3d000 / HCA 0 (distance 5 > 4)",
     R.NcclNet, {"kind": "gdr_disabled"}),
    # NVLS (NVLink SHARP) set-up steps: where an init that never completes stopped
    ("2.19", f"{H} NCCL INFO NVLS multicast support is available on dev 3", R.NcclNet, {"kind": "nvls"}),
    ("2.19", f"{H} NCCL INFO NVLS Bind mem 0xa20000000 UC handle 0x7f5c10cdb240 MC handle 0x7f5c10cdaa20 size 1073741824",
     R.NcclNet, {"kind": "nvls"}),
    ("2.30", f"{H} NCCL INFO NVLS tuning: nChannels 24", R.NcclNet, {"kind": "nvls", "value": "NVLS tuning: nChannels 24"}),
    # a log collector that cut the host:pid:tid and kept NCCL's [dev] (Kubeflow's pod logs), or a launcher's tag in front
    ("2.9", "[3] include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No space left on device",
     R.NcclWarn, {"source": "include/shm.h:28", "message": "Call to posix_fallocate failed : No space left on device",
                  "host": "", "pid": 0}),
    ("2.9", "[0] NCCL INFO Channel 01/02 :    0   1   2   3",
     R.NcclRingOrder, {"channel": 1, "nchannels": 2, "ranks": [0, 1, 2, 3], "pid": 0}),
    ("2.18", "[1,2]<stderr>:[2] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 10.7.0.12<41022> "
             "with error 12, opcode 0, len 0, vendor err 129",
     R.NcclWarn, {"source": "transport/net_ib.cc:1295", "pid": 0}),
    ("2.26", f"{H} NCCL CALL ncclAllReduce(0x7f1c00000000,0x7f1c00000000,262144,7,0,0x5581c0a0,0x55d0)", R.NcclLaunch,
     {"kind": "launch", "value": "ncclAllReduce"}),
    ("2.29", f"{H} NCCL INFO comm 0x5581c0a0 rank 3 nRanks 32 nNodes 4 localRanks 8 localRank 3 MNNVL 0",
     R.NcclCommInfo, {"nranks": 32, "nnodes": 4, "local_ranks": 8}),
    ("2.29", f"{H} NCCL INFO ncclCommSplit comm 0x55aa0 rank 1 nranks 8 cudaDev 3 nvmlDev 3 busId 3d000 parent 0x5581c0a0 "
             "childCount 1 color 0 key 1- Init START",
     R.NcclInit, {"caller": "ncclCommSplit", "parent": "0x5581c0a0", "split_count": 1, "color": 0, "phase": "START"}),
    ("2.30", f"{H} NCCL INFO AllReduce [Symmetric]: 1048576 Bytes -> Kernel ncclSymk_AllReduce_AGxLLMC_R_f32 nchannels 16 "
             "nthreads 512 nWorks 1",
     R.NcclTuning, {"op": "allreduce", "nbytes": 1048576, "algo": "Symmetric", "proto": "ncclSymk_AllReduce_AGxLLMC_R_f32"}),
    ("2.29", f"{H} NCCL INFO AllGather [Copy Engine]: 4194304 Bytes -> cudaMemcpyAsync",
     R.NcclTuning, {"op": "allgather", "algo": "Copy Engine", "proto": "cudaMemcpyAsync"}),
    ("2.30", f"{H} NCCL INFO Channel 02 : 3[3] -> 4[4] via SHM/direct", R.NcclConnection, {"transport": "SHM"}),
    ("2.32", f"{H} NCCL INFO ncclCommInitRankConfig comm 0x5581c0a0 rank 3 nranks 32 cudaDev 3 nvmlDev 3 busId 3d000 "
             "commId 0x7d1e9a0b33c1f2aa - Init COMPLETE",
     R.NcclInit, {"rank": 3, "nranks": 32, "comm_id": "0x7d1e9a0b33c1f2aa", "phase": "COMPLETE"}),
]


@pytest.mark.parametrize("release, line, kind, fields", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_release_line_form(release, line, kind, fields):
    rec = parse_nccl_line(line, "rank.log", 7)
    assert type(rec) is kind, (release, line, rec)
    for k, v in fields.items():
        assert getattr(rec, k) == v, (k, getattr(rec, k))


@pytest.mark.parametrize("line", [
    "2026-01-01 10:20:30 INFO training started",  # a logger's time is no host:pid:tid
    "[2026-01-01 10:20:30,123] [INFO] [engine.py:104] WARN about nothing",
    "step 20 10:20:30 WARN slow step",
])
def test_logger_lines_are_not_nccl_lines(line):
    assert parse_nccl_line(line, "x", 1) is None


def test_other_heads_stay_linear():
    """The fallback heads on long lines that almost match: no backtracking blow-up. Measured in CPU time of this
    thread (a linear parse of 60 kB takes milliseconds, a quadratic one seconds): the wall clock of a loaded
    machine counts other processes' turns."""
    for text in ("a" * 60_000 + " WARN x", ":1:1 " * 12_000 + "WARN", "] INFO " * 9000, "x.cc:1 " * 9000 + "NCCL"):
        t = time.thread_time()
        parse_nccl_line(text, "x", 1)
        assert time.thread_time() - t < 1.0, text[:20]
