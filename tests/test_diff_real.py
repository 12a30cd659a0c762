"""``compare`` on real runs: the bundled samples (2 x H200) and, when present, the real corpus beside the checkout."""
from __future__ import annotations

import pytest
from conftest import SAMPLES

from ncclscope.analysis import analyze_paths
from ncclscope.compare import Aspect, Direction, Tier, compare


def _compare(a, b):
    return compare(analyze_paths([a], cache=False), analyze_paths([b], cache=False), a.name, b.name)


def test_corpus_p2p_against_shm_names_the_transport_change_and_the_setting_behind_it(corpus):
    c = _compare(corpus / "healthy_ddp_p2p", corpus / "healthy_shm")
    transport = next(d for d in c.differences if d.aspect is Aspect.TRANSPORT)
    assert transport.tier is Tier.TRANSPORT and transport.direction is Direction.SLOWER
    assert (transport.a.value, transport.b.value) == ("P2P/CUMEM", "SHM")
    assert "NCCL_P2P_DISABLE=1 in B" in transport.message
    assert "via P2P/CUMEM" in transport.a.evidence.text and "via SHM/" in transport.b.evidence.text
    setting = next(d for d in c.differences if d.subject == "NCCL_P2P_DISABLE")
    assert (setting.tier, setting.a.value, setting.b.value) == (Tier.SETTING, None, "1")
    assert "NCCL_P2P_DISABLE set by environment to 1" in setting.b.evidence.text
    # the busbw the link change cost comes first, the transport line before the setting
    kinds = [d.aspect for d in c.differences]
    assert kinds[0] is Aspect.BUSBW and c.differences[0].direction is Direction.SLOWER
    assert kinds.index(Aspect.TRANSPORT) < kinds.index(Aspect.SETTING)
    assert c.differences[0].subject == "allreduce of 32-64 MiB"


def test_corpus_runs_against_themselves_have_no_difference(corpus):
    a = analyze_paths([corpus / "healthy_shm"], cache=False)
    assert compare(a, a).differences == ()


def test_samples_healthy_against_straggler_names_the_straggler_and_its_cost():
    c = _compare(SAMPLES / "gpu_healthy", SAMPLES / "gpu_straggler")
    first = c.differences[0]
    assert (first.aspect, first.tier, first.subject, first.direction) == (
        Aspect.STRAGGLER, Tier.MEASURED, "straggler rank 1", Direction.SLOWER)
    assert "the others waited 7.53 s for it" in first.message
    assert first.b.value == "rank 1: 7.53 s of others' waiting" and first.b.evidence is not None
    verdict = next(d for d in c.differences if d.aspect is Aspect.VERDICT)
    assert (verdict.a.value, verdict.b.value) == ("healthy", "degraded (culprit rank 1)")
    assert (c.a.verdict.value, c.b.verdict.value) == ("healthy", "degraded")


def test_samples_straggler_against_healthy_is_the_same_story_the_other_way():
    c = _compare(SAMPLES / "gpu_straggler", SAMPLES / "gpu_healthy")
    first = c.differences[0]
    assert (first.aspect, first.direction) == (Aspect.STRAGGLER, Direction.FASTER)
    assert "was a straggler in A only" in first.message


@pytest.mark.parametrize("bad, verdict", [("gpu_hang", "hang (culprit rank 1)"), ("gpu_crash", "crash (culprit rank 1)")])
def test_samples_healthy_against_a_failed_run_says_the_verdict(bad, verdict):
    c = _compare(SAMPLES / "gpu_healthy", SAMPLES / bad)
    d = next(d for d in c.differences if d.aspect is Aspect.VERDICT)
    assert (d.a.value, d.b.value, d.direction) == ("healthy", verdict, Direction.SLOWER)
    assert d.b.evidence is not None and d.a.evidence is None  # a healthy run has no finding that argues for it


def test_corpus_p2p_against_sockets_with_forced_tree_names_the_switches_first(corpus):
    """B disabled P2P and SHM (sockets) and forced NCCL_ALGO=Tree, and failed before connecting: no transport line
    can be compared, so the settings that switch transports off lead, then the forced algorithm."""
    c = _compare(corpus / "healthy_ddp_p2p", corpus / "config_error_algo_tree")
    settings = [d.subject for d in c.differences if d.tier is Tier.SETTING]
    assert settings[:3] == ["NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE", "NCCL_ALGO"]
    assert c.differences[0].subject == "NCCL_P2P_DISABLE"
    assert not [d for d in c.differences if d.aspect is Aspect.TRANSPORT]
    assert "transports of the world communicator (2 ranks): B shows no connection lines" in c.not_compared
    layout = next(d for d in c.differences if d.aspect is Aspect.LAYOUT)
    assert layout.b.value == "2 ranks on 2 nodes, 1 GPU a node"  # NCCL's own nNodes once P2P and SHM are off
    verdict = next(d for d in c.differences if d.aspect is Aspect.VERDICT)
    assert verdict.b.value.startswith("config_error")
