"""Topology facts from logs in the shape of real multi-node jobs (16 to 32 ranks, 2 nodes, NCCL 2.4
to 2.29): world size, nodes, version, channels, the ring of channel 0, transports, tree edges.
Fixtures: tests/data/topology/<case>/ (each SOURCE.md names the public thread whose shape it
follows; make_fixtures.py writes them), facts in tests/data/topology/EXPECTED.json."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ncclscope.analysis import analyze_paths
from ncclscope.model_build import build_run
from ncclscope.ingest import ingest

DATA = Path(__file__).resolve().parents[1] / "data" / "topology"
EXPECTED = json.loads((DATA / "EXPECTED.json").read_text())


@pytest.fixture(scope="module", params=sorted(EXPECTED))
def case(request):
    run = build_run(ingest([DATA / request.param]))
    return request.param, run, EXPECTED[request.param]


def world_comm(run):
    tops = [c for c in run.communicators if c.parent is None and c.nranks == run.job.world_size]
    assert len(tops) == 1, [(c.id, c.nranks, len(c.members)) for c in run.communicators][:8]
    return tops[0]


def test_world_nodes_version(case):
    name, run, want = case
    assert run.job.world_size == want["world_size"]
    assert run.job.nnodes == want["nodes"]
    assert len(run.job.hosts) == want.get("hosts", want["nodes"])
    assert run.job.nccl_version == want["nccl_version"]
    assert len([c for c in run.communicators if c.parent is None]) == want["communicators"]


def test_channels_ring_transports(case):
    name, run, want = case
    comm = world_comm(run)
    assert comm.n_channels == want["n_channels"]
    assert list(comm.rings[0]) == want["ring0"]
    assert comm.transports == want["transports"]


def test_tree_edges(case):
    name, run, want = case
    comm = world_comm(run)
    edges = {(p, c) for c, p in comm.trees[0].items() if p >= 0}
    for p, c in want["tree_edges"]:
        assert (p, c) in edges, (p, c)


def test_every_case_has_its_source():
    for name in EXPECTED:
        text = (DATA / name / "SOURCE.md").read_text()
        assert "https://github.com/" in text, name


def test_nccl_tests_table_and_nccl_lines_both_read():
    run = build_run(ingest([DATA / "nccl2103_roce_nccl_tests_2nodes"]))
    assert len(run.nccl_tests) == EXPECTED["nccl2103_roce_nccl_tests_2nodes"]["nccl_tests_rows"]
    assert run.communicators and run.job.nccl_version == "2.10.3"


def test_analysis_of_each_case_names_the_world(tmp_path):
    for name, want in EXPECTED.items():
        res = analyze_paths([DATA / name], cache=False)
        assert res.run.job.world_size == want["world_size"], name


def test_subgroups_without_comm_ids_are_told_apart(tmp_path):
    """NCCL 2.12 prints no commId: 8 processes make the world communicator, then ranks 0-3 and 4-7 each
    make their own 4-rank one (torch's new_group). Three communicators, each with the right members."""
    for g in range(8):
        pid = 3100 + g
        lines = [f"node-{g // 4}:{pid}:{pid + 40} [{g % 4}] NCCL INFO comm 0x55{g}0a0 rank {g} nranks 8 cudaDev {g % 4} "
                 f"busId {g % 4}7000 - Init COMPLETE",
                 f"node-{g // 4}:{pid}:{pid + 41} [{g % 4}] NCCL INFO comm 0x55{g}0b0 rank {g % 4} nranks 4 cudaDev {g % 4} "
                 f"busId {g % 4}7000 - Init COMPLETE"]
        (tmp_path / f"rank{g}.log").write_text("\n".join(lines) + "\n")
    run = build_run(ingest([tmp_path]))
    tops = sorted((c for c in run.communicators if c.parent is None), key=lambda c: (-c.nranks, min(c.members.values())))
    assert [(c.nranks, sorted(c.members.values())) for c in tops] == [
        (8, list(range(8))), (4, [0, 1, 2, 3]), (4, [4, 5, 6, 7])]
    assert run.job.world_size == 8
