"""At scale: a 64-rank run of about 1.2 M lines where one rank stopped early."""
from __future__ import annotations

import pytest

from ncclscope.analysis import analyze_paths
from ncclscope.synth import generate_run


@pytest.mark.xdist_group("scale")
def test_64_ranks_1_2M_lines_hang_names_the_rank(tmp_path):
    truth = generate_run(tmp_path / "run", nranks=64, steps=1700, fault="hang", fault_rank=35, fault_step=1690)
    assert 1_100_000 < truth.lines < 1_300_000
    res = analyze_paths([tmp_path / "run"], cache=False)  # how fast: benchmarks/parse_bench.py --ranks 64
    assert res.decision.verdict.value == "hang"
    assert res.decision.culprit_ranks == (35,)
    assert len(res.run.collectives) > 1_100_000


def test_coll_block_timestamps_fast_path_and_bad_hours():
    import math

    from ncclscope.sources.nccl_log import parse_nccl_line, scan_coll_block

    line = ("[2026-11-29 {h}:20:00.{f}] node0:17:17 [0] NCCL INFO AllReduce: opCount {i:x} sendbuff 0x7f00 "
            "recvbuff 0x7f00 count 1024 datatype 7 op 0 root 0 comm 0x55aa [nranks=8] stream 0x1\n")
    good = "".join(line.format(h="19", f=f"{i % 1000000:06d}", i=i) for i in range(3000)).encode()
    batch, rest = scan_coll_block(good, 1, "x")
    assert not rest and len(batch) == 3000
    for i in (0, 1234, 2999):
        text = line.format(h="19", f=f"{i % 1000000:06d}", i=i)
        assert batch.tss[i] == parse_nccl_line(text, "x", i + 1).ts
    # an hour 25 in a big block: numpy's string cast would crash the process; the values are NaN
    bad = good.replace(b" 19:20:", b" 25:20:")
    batch, rest = scan_coll_block(bad, 1, "x")
    assert len(batch) == 3000 and all(math.isnan(t) for t in batch.tss)


CLAIM = ("[2026-11-29 20:43:41.000001] {host}:{pid}:{pid} [0] NCCL INFO ncclCommInitRankConfig comm 0x5555aaaa "
         "rank {rank} nranks {nranks} cudaDev 0 nvmlDev 0 busId 60 commId 0xabcabc - Init COMPLETE\n")


@pytest.mark.parametrize("nranks, rank, where", [
    (10 ** 12, 0, "own file"), (10 ** 12, 7, "rank 0's log"), (10 ** 12 - 1, 0, "own file"), (2 ** 31 - 1, 5, "rank 0's log"), (500_000, 3, "rank 0's log"), (4, 9, "rank 0's log")])
def test_a_claimed_world_sizes_nothing_and_keeps_the_verdict(tmp_path, nranks, rank, where):
    """One line claiming an absurd (or merely unconfirmed) world added to the bundled hang: no
    allocation by the claim, the same verdict, culprit and stuck collective, world size 2."""
    import shutil
    import tracemalloc

    from conftest import SAMPLES

    run = tmp_path / "hang"
    shutil.copytree(SAMPLES / "gpu_hang", run)
    if where == "own file":
        (run / "claim.log").write_text(CLAIM.format(host="vm", pid=999, rank=rank, nranks=nranks))
    else:
        with open(run / "vm.820.nccl.log", "a") as f:
            f.write(CLAIM.format(host="vm", pid=820, rank=rank, nranks=nranks))
    tracemalloc.start()
    try:
        res = analyze_paths([run], cache=False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 300 * 2 ** 20, peak
    assert res.decision.verdict.value == "hang", res.decision.headline
    assert res.decision.culprit_ranks == (1,)
    assert (res.decision.stuck.pg, res.decision.stuck.seq) == ("0", 125)
    assert res.run.job.world_size == 2
    assert all(c.nranks <= 500_000 for c in res.run.communicators)
