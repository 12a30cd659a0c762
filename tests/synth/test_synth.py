"""Generated runs are valid NCCL logs: the real parsers read them and analyze rebuilds the job."""
from __future__ import annotations

import pytest
from ncclscope.analysis import analyze_paths
from ncclscope.ingest import ingest
from ncclscope.model_build import build_run
from ncclscope.sources import records as R
from ncclscope.sources.nccl_log import parse_nccl_line
from ncclscope.synth import generate_run, ring_orders, tree_parents


@pytest.mark.parametrize("nranks,g", [(64, 8), (20, 8), (16, 4)])
def test_rings_are_permutations_and_trees_are_trees(nranks, g):
    rings = ring_orders(nranks, g, 8)
    for order in rings.values():
        assert sorted(order) == list(range(nranks)) and order[0] == 0
    for ch, nodes in tree_parents(nranks, g, 8).items():
        roots = [r for r, (_d, up) in nodes.items() if up == -1]
        assert len(roots) == 1, ch
        for r, (downs, up) in nodes.items():
            assert len(downs) <= 3
            for d in downs:
                assert nodes[d][1] == r  # child points back
            seen, x = set(), r
            while x != -1:  # every rank reaches the root without a cycle
                assert x not in seen
                seen.add(x)
                x = nodes[x][1]


def test_every_line_parses_with_the_line_parser(tmp_path):
    truth = generate_run(tmp_path / "run", nranks=16, steps=3, seed=1)
    kinds: dict[type, int] = {}
    for f in sorted((tmp_path / "run").glob("*.nccl.log")):
        for i, line in enumerate(f.read_text().splitlines(), 1):
            assert "NCCL INFO" in line
            rec = parse_nccl_line(line, f.name, i)
            if rec is not None:
                kinds[type(rec)] = kinds.get(type(rec), 0) + 1
    assert kinds[R.NcclColl] == 16 * (2 + 3 * truth.per_step)
    assert kinds[R.NcclInit] == 32 and kinds[R.NcclCommInfo] == 16 and kinds[R.NcclTrees] == 16
    assert kinds[R.NcclRing] == 16 * truth.nchannels and kinds[R.NcclRingOrder] == truth.nchannels
    assert kinds[R.NcclEnv] == 16 * 4
    nets = kinds[R.NcclConnection]
    assert nets > 16 * truth.nchannels  # P2P sends plus NET send/receive pairs


def test_analyze_rebuilds_the_communicator(tmp_path):
    truth = generate_run(tmp_path / "run", nranks=64, steps=2, seed=2)
    run = build_run(ingest([tmp_path / "run"]))
    assert run.job.world_size == 64 and len(run.job.hosts) == 8
    (comm,) = run.communicators
    assert comm.nranks == 64 and comm.nnodes == 8 and comm.id == truth.comm_id
    assert comm.rings == truth.rings  # from the per-rank Ring lines: rank 0's lines are cut at 128 chars
    assert set(comm.transports) == {"P2P/CUMEM", "NET/IB"}
    assert sorted(comm.init_complete) == list(range(64))
    df = run.collectives
    assert len(df) == 64 * (2 + 2 * truth.per_step)
    assert set(df["seq"]) == set(range(1, 2 + 2 * truth.per_step + 1))
    big = df[df["op"] == "allreduce"]["bytes"].max()
    assert big == 25 * 1024 * 1024


def test_rank0_ring_line_is_cut_like_nccl(tmp_path):
    generate_run(tmp_path / "run", nranks=1024, steps=1, nchannels=2, seed=3)  # " %4d": 15 + 5k passes 127
    f = next(p for p in (tmp_path / "run").glob("node000.*.nccl.log") if "[0] NCCL" in p.read_text()[:200])
    lines = [ln for ln in f.read_text().splitlines() if " NCCL INFO Channel 00/02 :" in ln]
    msg = lines[0].split(" NCCL INFO ", 1)[1]
    assert msg.endswith("...") and len(msg) == 127


@pytest.mark.parametrize("fault", ["hang", "crash"])
def test_fault_culprit_is_named(tmp_path, fault):
    truth = generate_run(tmp_path / "run", nranks=32, steps=6, fault=fault, fault_rank=13, seed=4)
    res = analyze_paths([tmp_path / "run"], cache=False)
    assert res.decision.verdict.value == truth.verdict
    assert res.decision.culprit_ranks == truth.culprit_ranks == (13,)


def test_same_seed_same_bytes(tmp_path):
    a = generate_run(tmp_path / "a", nranks=16, steps=2, fault="desync", seed=7)
    b = generate_run(tmp_path / "b", nranks=16, steps=2, fault="desync", seed=7)
    assert a.bytes == b.bytes and a.lines == b.lines
    for f in (tmp_path / "a").iterdir():
        assert f.read_bytes() == (tmp_path / "b" / f.name).read_bytes()


def _matrix():
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "synth_matrix.py"
    spec = importlib.util.spec_from_file_location("synth_matrix", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["synth_matrix"] = mod  # its dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


def test_matrix_over_every_kind_of_evidence_has_no_false_alarm():
    """Everything, NCCL logs only (killed from outside; fault-free ones cut at a random moment), older
    watchdog lines only: every verdict and culprit right at 16 ranks, and no fault-free run an incident."""
    from ncclscope.synth import EVIDENCE

    m = _matrix()
    outcomes = m.run_matrix([16], 1, 6, list(EVIDENCE))
    assert {o.evidence for o in outcomes} == set(EVIDENCE)
    wrong = [(o.evidence, o.truth, o.got, o.want_culprits, o.got_culprits) for o in outcomes if not o.culprit_ok]
    assert not wrong, wrong
    scores = m.class_scores(outcomes)
    assert all(s["false_alarms"][0] == 0 for s in scores.values() if "false_alarms" in s)
    assert scores[("nccl_only", "hang")]["verdict_recall"] == (1, 1)
    assert scores[("watchdog_only", "unknown")]["false_alarms"] == (0, 1)


def test_class_scores_count_precision_recall_and_false_alarms():
    m = _matrix()
    O = m.Outcome
    outs = [O("full", 8, "hang", "hang", (3,), (3,), 0.1), O("full", 8, "hang", "crash", (5,), (5,), 0.1),
            O("full", 8, "healthy", "hang", (), (2,), 0.1, True), O("full", 8, "healthy", "healthy", (), (), 0.1, True),
            O("full", 8, "crash", "crash", (1,), (1, 2), 0.1)]
    s = m.class_scores(outs)
    assert s[("full", "hang")]["verdict_precision"] == (1, 2) and s[("full", "hang")]["verdict_recall"] == (1, 2)
    assert s[("full", "crash")]["culprit_precision"] == (1, 2) and s[("full", "crash")]["culprit_recall"] == (1, 1)
    assert s[("full", "healthy")]["false_alarms"] == (1, 2)
    assert "| full | hang | 1/2 | 1/2 |" in m.tables(outs)


def test_matrix_over_pasted_excerpts_of_start_up_hangs():
    """Store-based barrier, unique-id store wait, heartbeat monitor, nccl-tests with no row, a multi-host init one
    host's ranks never completed; the barrier's and
    the benchmark's fault-free forms (one round of waits; a passing sweep) raise no alarm."""
    from ncclscope.synth import EXCERPTS

    m = _matrix()
    outcomes = m.run_matrix([4, 16], 3, 6, [m.EXCERPT + k for k in EXCERPTS if k != "after_init"])
    wrong = [(o.evidence, o.truth, o.got, o.want_culprits, o.got_culprits) for o in outcomes if not o.culprit_ok]
    assert not wrong, wrong
    scores = m.class_scores(outcomes)
    assert scores[("excerpt:store_barrier", "unknown")]["false_alarms"] == (0, 6)
    assert scores[("excerpt:nccl_tests", "healthy")]["false_alarms"] == (0, 6)
    assert scores[("excerpt:store_barrier", "hang")]["culprit_recall"][0] > 0
    hit, of = scores[("excerpt:partial_init", "hang")]["culprit_recall"]  # one host's ranks never completed init
    assert of > 0 and hit == of


def test_write_excerpt_refuses_what_it_cannot_write(tmp_path):
    from ncclscope.synth import write_excerpt

    with pytest.raises(ValueError):
        write_excerpt(tmp_path / "a", "no_such_kind", 4, True)
    with pytest.raises(ValueError):
        write_excerpt(tmp_path / "b", "heartbeat", 4, False)  # a fault-free job prints no heartbeat timeout
    with pytest.raises(ValueError):
        write_excerpt(tmp_path / "c", "store_barrier", 1, True)


def test_matrix_after_init_excerpts_raise_no_false_alarm():
    """One host's NCCL init, then nothing or 1 to 5 training lines: a normal start either way (healthy, possible,
    when nothing follows): never a hang alarm on a start alone."""
    m = _matrix()
    outcomes = m.run_matrix([4, 16], 3, 6, [m.EXCERPT + "after_init"])
    wrong = [(o.truth, o.got) for o in outcomes if not o.verdict_ok]
    assert not wrong, wrong
