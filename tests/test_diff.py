"""``compare`` on generated runs (``synth.generate_run``): two runs of one job whose bus bandwidth and NCCL's
algorithm differ are told apart in that order, first; each line points at a real line of each run."""
from __future__ import annotations

from pathlib import Path

import pytest

from ncclscope.analysis import analyze_paths
from ncclscope.compare import Aspect, Comparison, Direction, Tier, compare
from ncclscope.synth import generate_run

STEPS = 6


def _pair(root: Path, na: int, nb: int) -> Comparison:
    """A: Ring at 180 GB/s; B: Tree at 40 GB/s, NCCL_ALGO=Tree set (the slow run)."""
    generate_run(root / "a", nranks=na, steps=STEPS, algo="RING", busbw_gbs=180.0, seed=1)
    generate_run(root / "b", nranks=nb, steps=STEPS, algo="TREE", busbw_gbs=40.0, seed=2, env={"NCCL_ALGO": "Tree"})
    return compare(analyze_paths([root / "a"], cache=False), analyze_paths([root / "b"], cache=False))


@pytest.fixture(scope="module", params=[(8, 8), (64, 64), (8, 64)], ids=["8-vs-8", "64-vs-64", "8-vs-64"])
def pair(request, tmp_path_factory) -> tuple[Comparison, Path, tuple[int, int]]:
    root = tmp_path_factory.mktemp("diff")
    return _pair(root, *request.param), root, request.param


def test_the_busbw_loss_of_the_gradient_allreduce_comes_first(pair):
    c, _, _ = pair
    first = c.differences[0]
    assert first.aspect is Aspect.BUSBW and first.tier is Tier.MEASURED
    assert first.subject.startswith("allreduce of 16-32 MiB")
    assert first.direction is Direction.SLOWER
    assert "-78%" in first.message or "-77%" in first.message, first.message
    assert 0.6 < first.score < 0.8  # nearly all of B's collective time, 77% slower


def test_the_algorithm_change_comes_before_settings_and_the_rest(pair):
    c, _, sizes = pair
    kinds = [d.aspect for d in c.differences]
    algo = kinds.index(Aspect.ALGORITHM)
    assert all(d.tier <= Tier.ALGORITHM for d in c.differences[:algo + 1])
    d = c.differences[algo]
    assert d.subject == "allreduce of 16-32 MiB" and d.a.value == "RING/SIMPLE" and d.b.value == "TREE/SIMPLE"
    assert algo == (2 if sizes == (8, 64) else 1)  # after the busbw line (and the new network links when grown)


def test_the_setting_behind_it_is_named_and_only_the_layout_differs_otherwise(pair):
    c, _, sizes = pair
    settings = [d for d in c.differences if d.aspect is Aspect.SETTING]
    assert [(d.subject, d.tier, d.a.value, d.b.value) for d in settings] == [("NCCL_ALGO", Tier.SETTING, None, "Tree")]
    layout = [d for d in c.differences if d.aspect is Aspect.LAYOUT]
    transports = [d for d in c.differences if d.aspect is Aspect.TRANSPORT]
    if sizes == (8, 64):
        assert layout[0].a.value == "8 ranks on 1 node, 8 GPUs a node"
        assert layout[0].b.value == "64 ranks on 8 nodes, 8 GPUs a node"
        assert "nranks 8 " in layout[0].a.evidence.text and "nranks 64 " in layout[0].b.evidence.text
        assert transports[0].direction is Direction.SLOWER and "NET/IB" in transports[0].b.value
    else:
        assert not layout and not transports
    assert not [d for d in c.differences if d.aspect in (Aspect.VERDICT, Aspect.STRAGGLER, Aspect.VERSION)]


def test_every_evidence_line_is_a_line_of_its_run(pair):
    """A side's evidence names a file of its run and a line of it; an NCCL line is quoted as written."""
    c, root, _ = pair
    checked = 0
    for d in c.differences:
        for run, side in (("a", d.a), ("b", d.b)):
            e = side.evidence
            if e is None:
                continue
            lines = (root / run / e.file).read_text().splitlines()
            assert 1 <= e.line <= len(lines), (d.message, e)
            if " NCCL INFO " in e.text:
                assert lines[e.line - 1].strip() == e.text
            checked += 1
    assert checked >= 6


def test_a_run_against_itself_has_no_difference(tmp_path):
    generate_run(tmp_path / "a", nranks=8, steps=STEPS, algo="RING", busbw_gbs=180.0, seed=1)
    a = analyze_paths([tmp_path / "a"], cache=False)
    c = compare(a, a)
    assert c.differences == ()
    assert c.not_compared == ()


def test_what_one_side_does_not_show_is_said_not_compared(tmp_path):
    generate_run(tmp_path / "a", nranks=8, steps=STEPS, algo="RING", busbw_gbs=180.0, seed=1)
    generate_run(tmp_path / "b", nranks=8, steps=STEPS, seed=1)  # no TUNING lines, no timed records
    c = compare(analyze_paths([tmp_path / "a"], cache=False), analyze_paths([tmp_path / "b"], cache=False))
    assert not [d for d in c.differences if d.aspect in (Aspect.ALGORITHM, Aspect.BUSBW)]
    assert any(n.startswith("NCCL's algorithm choices: B has no TUNING lines") for n in c.not_compared)
    assert any(n.startswith("bus bandwidth: B has no timed collectives") for n in c.not_compared)


def test_a_straggler_is_measured_by_the_time_it_cost(tmp_path):
    generate_run(tmp_path / "a", nranks=8, steps=STEPS, busbw_gbs=100.0, seed=1)
    generate_run(tmp_path / "b", nranks=8, steps=STEPS, busbw_gbs=100.0, seed=1, fault="straggler", fault_rank=5,
                 straggle_s=0.2)
    c = compare(analyze_paths([tmp_path / "a"], cache=False), analyze_paths([tmp_path / "b"], cache=False))
    first = c.differences[0]
    assert (first.aspect, first.tier, first.subject, first.direction) == (
        Aspect.STRAGGLER, Tier.MEASURED, "straggler rank 5", Direction.SLOWER)
    assert "the others waited" in first.message and first.b.value.startswith("rank 5: ")
    assert first.a.value is None and first.b.evidence is not None
    verdict = next(d for d in c.differences if d.aspect is Aspect.VERDICT)
    assert (verdict.a.value, verdict.b.value) == ("healthy", "degraded (culprit rank 5)")


def test_a_cached_analysis_compares_as_a_fresh_one(tmp_path, monkeypatch):
    """The lines a comparison quotes (transports, rings, trees, TUNING choices) are kept in the cache entry."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    generate_run(tmp_path / "a", nranks=8, steps=STEPS, algo="RING", busbw_gbs=180.0, seed=1)
    generate_run(tmp_path / "b", nranks=16, steps=STEPS, algo="TREE", busbw_gbs=40.0, seed=2, gpus_per_host=4)
    fresh = compare(analyze_paths([tmp_path / "a"], cache=False), analyze_paths([tmp_path / "b"], cache=False))
    for _ in range(2):  # the first call stores the entries, the second reads them back
        cached = compare(analyze_paths([tmp_path / "a"]), analyze_paths([tmp_path / "b"]))
    assert cached == fresh
    assert {d.aspect for d in fresh.differences} >= {Aspect.BUSBW, Aspect.TRANSPORT, Aspect.ALGORITHM, Aspect.LAYOUT}
