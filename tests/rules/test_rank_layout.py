"""Ranks claimed twice while others are claimed by none (``rules.launch.doubled_ranks``): the launcher numbered every
node's processes as the first ranks (srun with one task per node, no --ntasks-per-node): a config error, no rank at
fault. Lightning's ``initializing ddp: GLOBAL_RANK: r, MEMBER: m/N`` lines are the claims (``RankClaim`` records).
Logs in the shapes of Lightning-AI/pytorch-lightning#4389, #10098 and #8707."""
from __future__ import annotations

from pathlib import Path

from ncclscope.analysis import analyze_paths
from ncclscope.rules.launch import MAX_LISTED, doubled_ranks
from ncclscope.sources import records as R
from ncclscope.sources.torch_log import parse_torch_lines

BANNER = "GPU available: True, used: True\nTPU available: False, using: 0 TPU cores\n"


def claims(ranks: list[int], world: int = 8) -> str:
    return "".join(f"initializing ddp: GLOBAL_RANK: {r}, MEMBER: {r + 1}/{world}\n" for r in ranks)


def _analyze(tmp_path: Path, text: str):
    p = tmp_path / "slurm-1.out"
    p.write_text(text)
    return analyze_paths([p], cache=False)


def test_rule_needs_a_doubled_rank_and_an_unclaimed_one():
    got = doubled_ranks([1, 1, 2, 2, 3, 3, 0, 0], 8)
    assert got is not None and got.doubled == ((0, 2), (1, 2), (2, 2), (3, 2))
    assert got.unclaimed == (4, 5, 6, 7) and got.unclaimed_count == 4
    assert doubled_ranks([0, 1, 2, 3], 8) is None  # half the world never started: no doubled rank
    assert doubled_ranks(list(range(8)) * 2, 8) is None  # a complete world twice: a restart, two runs
    assert doubled_ranks([0, 0], None) is None  # no world known: nothing to say
    assert doubled_ranks([0, 0, 9, 9], 4) is not None  # claims outside the world are ignored, 1-3 unclaimed


def test_rule_lists_a_bounded_number_of_ranks():
    got = doubled_ranks(list(range(500)) * 2, 1 << 16)
    assert got is not None and len(got.unclaimed) == MAX_LISTED and len(got.doubled) == MAX_LISTED
    assert got.unclaimed_count == (1 << 16) - 500


def test_lightning_claims_are_rank_claims_and_give_the_world():
    recs = list(parse_torch_lines(enumerate((BANNER + claims([1, 1, 0, 0])).splitlines(), 1), "slurm-1.out"))
    got = [(r.rank, r.world_size) for r in recs if isinstance(r, R.RankClaim)]
    assert got == [(1, 8), (1, 8), (0, 8), (0, 8)]
    assert all(isinstance(r, R.WorldSize) for r in recs if isinstance(r, R.RankClaim))


def test_each_node_numbered_as_the_first_ranks_is_a_config_error(tmp_path):
    a = _analyze(tmp_path, BANNER * 2 + claims([1, 1, 2, 2, 3, 3, 0, 0]))
    assert a.decision.verdict.value == "config_error"
    assert a.decision.culprit_ranks == ()
    f = next(f for f in a.findings if f.data.get("unclaimed_count") == 4)
    assert "--ntasks-per-node" in f.hint and "4, 5, 6, 7" in f.message


def test_half_the_world_claimed_once_is_no_config_error(tmp_path):
    a = _analyze(tmp_path, BANNER + claims([1, 2, 0, 3]))  # #8707: the other node never started
    assert a.decision.verdict.value != "config_error"
    assert not any("unclaimed" in f.data for f in a.findings)
