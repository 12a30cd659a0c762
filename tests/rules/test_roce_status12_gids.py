"""An IB retry-exceeded error (completion status 12) that shows a routable GID pair (NCCL 2.21+ prints the GIDs in
use: IPv4-mapped or global / unique-local IPv6 on both ends) is a network failure, whether or not the job set
NCCL_IB_GID_INDEX; the GID index stays the suspect (config error) where the GIDs are link-local or not printed."""
from __future__ import annotations

from pathlib import Path

import pytest

from ncclscope.analysis import analyze_paths
from ncclscope.model import Verdict
from ncclscope.nccl.gids import routable, shown_routable


def _log(gids: str | None, gid_set: bool) -> str:
    lines = []
    for host, pid, rank in (("roce-a", 5101, 0), ("roce-b", 6202, 1)):
        head = f"{host}:{pid}:{pid + 40} [0] NCCL INFO "
        if gid_set:
            lines.append(head + "NCCL_IB_GID_INDEX set by environment to 3.")
        lines += [head + f"NET/IB : Using [0]mlx5_2:1/RoCE [RO]; OOB eth0:10.30.1.{11 + rank}<0>",
                  head + f"comm 0x5571 rank {rank} nranks 2 cudaDev 0 nvmlDev 0 busId 1b000 commId 0x9a1 - Init COMPLETE"]
    tail = f" localGid {gids.split()[0]} remoteGids {gids.split()[1]}" if gids else ""
    lines += [f"roce-a:5101:5190 [0] transport/net_ib.cc:1697 NCCL WARN NET/IB : Got completion from peer "
              f"10.30.1.12<38921> with {'status=12 opcode=0 len=0' if gids else 'error 12, opcode 0, len 0,'} "
              f"vendor err 129 (Send){tail}",
              "roce-a:5101:5190 [0] NCCL INFO transport/net.cc:1302 -> 6"]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("gids", ["::ffff:10.30.1.11 ::ffff:10.30.1.12", "fd00:1148::3:ff22 fd00:1148::3:ff1f"])
@pytest.mark.parametrize("gid_set", [False, True])
def test_routable_gids_make_it_a_network_failure(tmp_path: Path, gids: str, gid_set: bool) -> None:
    p = tmp_path / "job.log"
    p.write_text(_log(gids, gid_set))
    d = analyze_paths([p], cache=False).decision
    assert d.verdict == Verdict.CRASH and d.culprit_ranks == (), d.headline


@pytest.mark.parametrize("gids, gid_set", [("fe80::966d:ae03:8b:df54 fe80::966d:ae03:8b:df78", False),
                                           (None, False), (None, True)], ids=["link-local", "unset", "set"])
def test_the_gid_index_stays_the_suspect_without_a_routable_pair(tmp_path: Path, gids: str | None,
                                                                 gid_set: bool) -> None:
    p = tmp_path / "job.log"
    p.write_text(_log(gids, gid_set))
    assert analyze_paths([p], cache=False).decision.verdict == Verdict.CONFIG_ERROR


def test_gids() -> None:
    assert routable("::ffff:10.30.1.11") and routable("fd00:1148:9000:5000:4:200:3:ff22")
    assert not routable("fe80::966d:ae03:8b:df54") and not routable("::ffff:") and not routable("::")
    assert shown_routable("(Recv) localGid fd00::1:ff22 remoteGidsfd00::1:ff1f")  # the label glued to the address
    assert not shown_routable("Got completion from peer 10.30.1.12<38921> with error 12, opcode 0")
