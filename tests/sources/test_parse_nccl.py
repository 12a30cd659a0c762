"""NCCL log lines of every version (2.10 to 2.30), from the real corpus and built from the reference."""
from __future__ import annotations

import pytest

from ncclscope.sources import records as R
from ncclscope.sources.nccl_log import parse_nccl_line


def p(line: str):
    return parse_nccl_line(line, "f.log", 1)


def test_prefix_with_wrappers_and_timestamp():
    base = "vm:1632:1650 [0] NCCL INFO NCCL version 2.28.9+cuda13.0"
    for wrapped in (base, "[rank0]:" + base, "[default0]:" + base, "[1,0]<stdout>:" + base,
                    "(RayTrainWorker pid=4242) " + base, "[2026-11-29 19:31:42] " + base,
                    "[2026-11-29 19:31:42.123456] " + base):
        r = p(wrapped)
        assert isinstance(r, R.NcclVersion), wrapped
        assert (r.host, r.pid, r.tid, r.version, r.cuda) == ("vm", 1632, 1650, "2.28.9", "13.0")
    assert p("[2026-11-29 19:31:42.5] " + base).ts == pytest.approx(1795980702.5)


def test_bare_version_line_of_old_nccl():
    r = p("NCCL version 2.10.3+cuda11.4")
    assert isinstance(r, R.NcclVersion) and r.version == "2.10.3" and r.pid == 0


@pytest.mark.parametrize("line,caller,comm_id,parent,phase", [
    # 2.10-2.17
    ("h:1:1 [0] NCCL INFO comm 0x55d0 rank 3 nranks 8 cudaDev 3 busId 7000 - Init COMPLETE", None, None, None,
     "COMPLETE"),
    # 2.18
    ("h:1:1 [0] NCCL INFO comm 0x55d0 rank 3 nranks 8 cudaDev 3 busId 7000 commId 0xabc - Init COMPLETE", None,
     "0xabc", None, "COMPLETE"),
    # 2.19-2.20
    ("h:1:1 [0] NCCL INFO comm 0x55d0 rank 3 nranks 8 cudaDev 3 nvmlDev 3 busId 7000 commId 0xabc - Init START",
     None, "0xabc", None, "START"),
    # 2.23+ (real corpus line)
    (("vm:1632:1632 [0] NCCL INFO ncclCommInitRankConfig comm 0x3ae73dc0 rank 0 nranks 2 cudaDev 0 nvmlDev 0 "
     "busId 60 commId 0x9913440b67c3cc19 - Init COMPLETE"), "ncclCommInitRankConfig", "0x9913440b67c3cc19",
     None, "COMPLETE"),
    # split, 2.24+ (real corpus line): no commId, "key 0- Init"
    (("vm:1632:1632 [0] NCCL INFO ncclCommSplit comm 0x468a3670 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 60 "
     "parent 0x3ae73dc0 splitCount 1 color 2130503744 key 0- Init START"), "ncclCommSplit", None,
     "0x3ae73dc0", "START"),
    # 2.29: [Rank N] prefix and childCount
    (("h:1:1 [0] NCCL INFO [Rank 5] ncclCommSplit comm 0x1 rank 5 nranks 8 cudaDev 5 nvmlDev 5 busId 9000 "
     "parent 0x2 childCount 3 color 7 key 5- Init START"), "ncclCommSplit", None, "0x2", "START"),
    ("h:1:1 [0] NCCL INFO comm 0x55d0 rank 3 nranks 8 cudaDev 3 busId 7000 - Destroy COMPLETE", None, None, None,
     "Destroy COMPLETE"),
])
def test_init_forms(line, caller, comm_id, parent, phase):
    r = p(line)
    assert isinstance(r, R.NcclInit)
    assert (r.caller, r.comm_id, r.parent, r.phase) == (caller, comm_id, parent, phase)


def test_split_fields():
    r = p("vm:1632:1632 [0] NCCL INFO ncclCommSplit comm 0x468a3670 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 60 "
          "parent 0x3ae73dc0 splitCount 1 color 2130503744 key 0- Init START")
    assert (r.split_count, r.color, r.key, r.rank, r.nranks, r.bus_id) == (1, 2130503744, 0, 0, 2, "60")


def test_ring_order_old_and_new_and_truncated():
    old = p("h:1:1 [0] NCCL INFO Channel 00/08 :    0   5   4   7   6   3   2   1   8  13  12  15  14  11  10   9")
    assert isinstance(old, R.NcclRingOrder) and old.ranks[:3] == [0, 5, 4] and old.nchannels == 8
    new = p("vm:1:1 [0] NCCL INFO Channel 00/24 : 0 1")
    assert new.ranks == [0, 1] and new.nchannels == 24 and not new.truncated
    cut = p("h:1:1 [0] NCCL INFO Channel 03/32 :    0    1    2    3 ...")
    assert cut.truncated and cut.channel == 3


def test_ring_tree_lines():
    r = p("vm:1632:1632 [0] NCCL INFO Ring 07 : 1 -> 0 -> 1")
    assert isinstance(r, R.NcclRing) and (r.channel, r.prev, r.rank, r.next) == (7, 1, 0, 1)
    t = p("swat:2017630:2017675 [6] NCCL INFO Trees [0] 14/-1/-1->12->11 [1] 14/4/-1->12->-1")
    assert isinstance(t, R.NcclTrees) and t.rank == 12 and t.channels == [(0, (14, -1, -1), 11), (1, (14, 4, -1), -1)]
    g = p("vm:1632:1632 [0] NCCL INFO Tree 6 : 1 -> 0 -> -1/-1/-1")
    assert isinstance(g, R.NcclTree) and (g.channel, g.up, g.rank, g.downs) == (6, 1, 0, (-1, -1, -1))


@pytest.mark.parametrize("line,transport,direction,ci", [
    ("vm:1632:1632 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM", "P2P/CUMEM", None, 0),
    ("h:1:1 [0] NCCL INFO Channel 00/1 : 0[0] -> 1[1] via P2P/CUMEM/read", "P2P/CUMEM", None, 1),
    ("h:1:1 [0] NCCL INFO Channel 02/0 : 0[7000] -> 1[8000] via P2P/direct pointer", "P2P/direct", None, 0),
    ("h:1:1 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via P2P/IPC", "P2P/IPC", None, 0),  # 2.7-2.13
    ("vm:1808:1808 [0] NCCL INFO Channel 03 : 0[0] -> 1[1] via SHM/direct/direct", "SHM", None, 0),
    ("h:1:1 [0] NCCL INFO Channel 03 : 0[0] -> 1[1] via direct shared memory", "SHM", None, 0),
    ("hostname-test:981:1267 [1] NCCL INFO Channel 09/0 : 33[1] -> 41[1] [send] via NET/IBext_v8/4", "NET/IBext_v8",
     "send", 0),
    ("h:1:1 [0] NCCL INFO Channel 01/0 : 8[0] -> 0[0] [receive] via NET/IB/0/GDRDMA", "NET/IB", "receive", 0),
    ("h:1:1 [0] NCCL INFO Channel 01/0 : 8[0] -> 0[0] [send] via NET/Socket/1(3)", "NET/Socket", "send", 0),
])
def test_connections(line, transport, direction, ci):
    r = p(line)
    assert isinstance(r, R.NcclConnection)
    assert (r.transport, r.direction, r.conn_index) == (transport, direction, ci)


def test_coll_line_and_opcount_hex():
    r = p("gpu:615:18953 [2] NCCL INFO AllReduce: opCount 139d sendbuff 0x78d056200000 recvbuff 0x78d056200000 "
          "count 7382228 datatype 7 op 0 root 0 comm 0x78cfda045840 [nranks=128] stream 0x78d07125e5e0")
    assert isinstance(r, R.NcclColl)
    assert (r.op, r.opcount, r.count, r.datatype, r.nranks, r.comm) == ("allreduce", 0x139D, 7382228, 7, 128,
                                                                        "0x78cfda045840")
    s = p("h:1:1 [0] NCCL INFO Send: opCount 0 sendbuff (nil) recvbuff 0x7f count 10 datatype 0 op 0 root 3 "
          "comm 0x1 [nranks=4] stream 0x2")
    assert s.op == "send" and s.root == 3


def test_warn_forms():
    old = p("[2025-11-24 11:20:21] gpu-server320:1:2 [5] misc/socket.cc:46 NCCL WARN socketProgressOpt: Call to send "
            "to 10.44.137.149<52905> failed : Connection reset by peer")
    assert isinstance(old, R.NcclWarn) and old.source == "misc/socket.cc:46" and "Connection reset" in old.message
    new = p("h:1:2 [0] misc/socket.cc:71 (socketProgress) NCCL WARN socketProgress: Connection closed by remote peer "
            "10.10.1.3<36138>")
    assert new.func == "socketProgress" and new.source == "misc/socket.cc:71"
    real = p("[2026-11-29 19:25:00] vm:1011:1011 [0] enqueue.cc:1859 NCCL WARN Error : no algorithm/protocol available "
             "for function AllGather with datatype ncclInt8. NCCL_ALGO was set to Tree.")
    assert isinstance(real, R.NcclWarn) and "NCCL_ALGO was set to Tree" in real.message


def test_backtrace_env_net_pattern_tuning_timings():
    b = p("vm:1011:1011 [0] NCCL INFO enqueue.cc:1948 -> 5")
    assert isinstance(b, R.NcclBacktrace) and b.code == 5
    b2 = p("h:1:1 [0] NCCL INFO group.cc:75 -> 6 [Async thread]")
    assert isinstance(b2, R.NcclBacktrace) and b2.code == 6
    e = p("vm:1632:1632 [0] NCCL INFO NCCL_NVLS_ENABLE set by environment to 0.")
    assert isinstance(e, R.NcclEnv) and (e.name, e.value) == ("NCCL_NVLS_ENABLE", "0")
    e2 = p("vm:1011:1011 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to lo")
    assert e2.value == "lo"
    n = p("vm:1632:1632 [0] NCCL INFO Using network Socket")
    assert isinstance(n, R.NcclNet) and n.kind == "network" and n.value == "Socket"
    ib = p("h:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]; OOB eth0:10.0.0.1<0>")
    assert ib.kind == "ib"
    g = p("h:1:1 [0] NCCL INFO NET/Socket : GPU Direct RDMA Disabled for HCA 0 'eth0'")
    assert g is None or isinstance(g, R.NcclNet)
    pat = p("vm:1632:1632 [0] NCCL INFO Pattern 4, crossNic 0, nChannels 12, bw 30.000000/30.000000, type NVL/PIX, "
            "sameChannels 1")
    assert isinstance(pat, R.NcclPattern) and (pat.pattern, pat.nchannels, pat.type_intra) == (4, 12, "NVL")
    old_pat = p("h:1:1 [0] NCCL INFO Pattern 4, crossNic 0, nChannels 2, speed 12.000000/12.000000, type NVL/PIX, "
                "sameChannels 1")
    assert isinstance(old_pat, R.NcclPattern)
    t = p("vm:1632:1632 [0] NCCL INFO Broadcast: 134283264 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..23}")
    assert isinstance(t, R.NcclTuning) and (t.op, t.nbytes, t.algo, t.proto) == ("broadcast", 134283264, "RING", "SIMPLE")
    t_old = p("h:1:1 [0] NCCL INFO 1048576 Bytes -> Algo 1 proto 2 time 12.5")
    assert isinstance(t_old, R.NcclTuning) and t_old.op is None
    tim = p("vm:1632:1632 [0] NCCL INFO Init timings - ncclCommInitRankConfig: rank 0 nranks 2 total 0.61 (kernels 0.41, "
            "alloc 0.01, bootstrap 0.11, allgathers 0.00, topo 0.05, graphs 0.01, connections 0.01, rest 0.01)")
    assert isinstance(tim, R.NcclInitTimings) and tim.total == 0.61 and tim.parts["bootstrap"] == 0.11
    tim22 = p("h:1:1 [0] NCCL INFO Init timings: rank 0 nranks 8 total 1.20 (kernels 0.30, bootstrap 0.10, "
              "allgathers 0.00, topo 0.40, graphs 0.10, connections 0.20, rest 0.10)")
    assert isinstance(tim22, R.NcclInitTimings)
    ci = p("swat1-04:2017630:2017675 [6] NCCL INFO comm 0x8ec0ac0 rank 6 nRanks 16 nNodes 2 localRanks 8 localRank 6 "
           "MNNVL 0")
    assert isinstance(ci, R.NcclCommInfo) and (ci.nranks, ci.nnodes, ci.local_ranks) == (16, 2, 8)
    ch = p("vm:1632:1632 [0] NCCL INFO 24 coll channels, 24 collnet channels, 0 nvls channels, 32 p2p channels, "
           "32 p2p channels per peer")
    assert isinstance(ch, R.NcclChannels) and ch.coll == 24


def test_irrelevant_lines_are_none():
    for line in ("hello world", "vm:1632:1632 [0] NCCL INFO UDS converted handle 0x7f to fd 71 on remote peer 1",
                 "[rank0]:[W1129 19:33:18.275893623 Utils.hpp:137] Warning: NCCL something", ""):
        assert p(line) is None


def test_another_process_line_glued_behind_a_head_is_read_as_that_process_line():
    """Two processes writing one terminal (NVIDIA/nccl#147 shape): one's head, then another's whole line. The inner
    line is whole and is read as its own process's; the outer message is elsewhere (its own later line)."""
    from ncclscope.sources.nccl_log import parse_nccl_line
    rec = parse_nccl_line("dgx-b12:51215:51355 [6] NCCL INFO dgx-b12:51217:51331 [7] NCCL INFO Ring 04 : 7[7] -> 3[3] "
                          "via P2P/IPC", "f", 1)
    assert (type(rec).__name__, rec.pid, rec.tid, rec.src, rec.dst) == ("NcclConnection", 51217, 51331, 7, 3)
    rec = parse_nccl_line("dgx-b12:51207:51344 [2] NCCL INFO dgx-b12:51215:51215 [6] NCCL INFO NCCL_SOCKET_IFNAME set "
                          "by environment to ib0", "f", 2)
    assert (type(rec).__name__, rec.pid, rec.name, rec.value) == ("NcclEnv", 51215, "NCCL_SOCKET_IFNAME", "ib0")
