"""Round twenty-nine's cases (tests/data/classes29/), written from slow runs the held-out sets showed and the analysis
called healthy: two runs of one job in one input, the one on more GPUs no faster (``rules.scaling``, read by
``sources.pace`` and judged by ``detectors.slow_scaling``): degraded, possible. Counter-cases: GPUs that scale well, a
batch doubled on the same GPU, and runs of larger steps that take no longer for the same work."""
from __future__ import annotations

import pytest
from class_cases import CaseSet
from wild_cases import DATA

SET = CaseSet(DATA / "classes29")
MINE = SET.names()


@pytest.mark.parametrize("name", MINE)
def test_class_case(name):
    SET.check(name)


def _run(gpus=None, steps=None, seconds=None, wps=None, multi=False, line=1):
    from ncclscope.rules.scaling import RunSpeed

    return RunSpeed(("f", line, "t"), gpus, "test", multi, steps, seconds, wps)


def test_efficiency_is_the_step_time_ratio_at_a_kept_batch_per_gpu():
    from ncclscope.rules.scaling import scaling_loss

    loss = scaling_loss([_run(1, 8000, 0.5), _run(4, 2000, 1.0, line=2)])
    assert loss is not None and loss.how == "efficiency" and loss.figure == pytest.approx(0.5)
    assert scaling_loss([_run(1, 8000, 0.5), _run(4, 2000, 0.8)]) is None  # 62.5 %: above the floor


def test_a_rate_of_the_whole_job_is_held_against_the_gpus():
    from ncclscope.rules.scaling import scaling_loss

    loss = scaling_loss([_run(4, wps=40_000), _run(8, wps=44_000)])
    assert loss is not None and loss.figure == pytest.approx(0.55)
    assert scaling_loss([_run(4, wps=40_000), _run(8, wps=70_000)]) is None


def test_equal_gpu_counts_are_never_compared():
    from ncclscope.rules.scaling import scaling_loss

    assert scaling_loss([_run(2, 4000, 0.2), _run(2, 4000, 0.9)]) is None


def test_a_launchers_run_takes_its_gpus_from_a_whole_ratio_of_steps_only():
    from ncclscope.rules.scaling import scaling_loss

    loss = scaling_loss([_run(1, 900, 0.1), _run(None, 300, 0.3, multi=True)])
    assert loss is not None and loss.inferred and loss.large.gpus == 3
    assert scaling_loss([_run(1, 900, 0.1), _run(None, 350, 0.3, multi=True)]) is None  # 2.57: no whole number
    assert scaling_loss([_run(1, 900, 0.1), _run(None, 300, 0.3, multi=False)]) is None  # no launcher: a batch change


def test_without_counts_only_the_same_work_far_slower_counts():
    from ncclscope.rules.scaling import SLOWER_X, scaling_loss

    assert scaling_loss([_run(None, 4000, 1.0), _run(None, 1000, 4.0 * SLOWER_X)]) is not None
    assert scaling_loss([_run(None, 4000, 1.0), _run(None, 1000, 4.0 * SLOWER_X * 0.95)]) is None
    assert scaling_loss([_run(None, 4000, 1.0), _run(None, 1600, 9.0)]) is None  # 2.5: other work, not the same


def test_the_reader_cuts_a_console_at_its_prompts_and_keeps_each_runs_main_bar():
    from ncclscope.sources.pace import PaceReader

    r = PaceReader("c.txt")
    lines = ["user@box:~/w$ CUDA_VISIBLE_DEVICES=0 python t.py",
             "100%|##########| 400/400 [00:40<00:00, 10.00it/s]",
             " 100%|##########| 50/50 [00:02<00:00, 25.00it/s]",  # its evaluation's shorter bar
             "user@box:~/w$ nvidia-smi",  # a look at the job: no new run
             "user@box:~/w$ torchrun --nnodes=2 --nproc_per_node 4 t.py",
             " 10%|#         | 5/50 [00:20<03:00, 4.00s/it]"]
    for n, t in enumerate(lines, 1):
        r.read(n, t, t)
    (rec,) = list(r.flush())
    runs = rec.runs
    assert [(x["gpus"], x["multi"], x["steps"]["total"]) for x in runs] == [(1, False, 400), (8, True, 50)]
    assert runs[0]["steps"]["seconds"] == pytest.approx(0.1) and runs[1]["steps"]["seconds"] == pytest.approx(4.0)


def test_the_reader_is_bounded_and_quiet_on_other_text():
    from ncclscope.sources.pace import MAX_BARS, MAX_RUNS, PaceReader

    r = PaceReader("c.txt")
    for n in range(1, 5000):
        r.read(n, f"$ python run{n}.py", f"$ python run{n}.py")
        r.read(n, f" 1%| | {n}/{n + 7} [00:01<00:09, 1.00it/s]", f" 1%| | {n}/{n + 7} [00:01<00:09, 1.00it/s]")
    assert len(r.runs) == MAX_RUNS and all(len(x.bars) <= MAX_BARS for x in r.runs)
    quiet = PaceReader("d.txt")
    for n, t in enumerate(["loss 0.4 wps", "Total train batch size = x", "it/s", "epoch 1 | wps -3 |"], 1):
        quiet.read(n, t, t)
    assert list(quiet.flush()) == []


def test_a_file_that_ends_at_its_loops_announcement_is_a_possible_hang():
    from ncclscope.rules.hang import SETUP_GROUP, loop_started

    ends = ["2023-05-02 | INFO | fairseq_cli.train | Start iterating over samples"]
    st = loop_started(ends, None, 8, False, False, False)
    assert st is not None and st.level == "possible" and "Start iterating over samples" in st.why
    assert loop_started(ends, SETUP_GROUP, None, False, False, False) is not None
    assert loop_started(ends, None, 1, False, False, False) is None  # one process: nothing says it is distributed
    assert loop_started(ends, None, 8, True, False, False) is None  # a collective recorded: it went on
    assert loop_started(ends, None, 8, False, True, False) is None  # a failure tells its own story
    assert loop_started(ends, None, 8, False, False, True) is None  # the job's end is known
    assert loop_started(["epoch 001:  100 / 9214 loss=9.8"], None, 8, False, False, False) is None


def test_fairseqs_ranks_joining_from_their_hosts_form_the_group_on_as_many_nodes():
    from ncclscope.sources.records import GroupFormed, NodeCount, WorldSize
    from ncclscope.sources.torch_log import parse_torch_lines

    lines = [f"| INFO | fairseq.distributed.utils | initialized host node-{r // 4} as rank {r}" for r in (3, 0, 5, 1, 7, 2, 6, 4)]
    lines.append("2023-05-02 | INFO | fairseq_cli.train | training on 8 devices (GPUs/TPUs)")
    recs = list(parse_torch_lines(enumerate(lines, 1), "f"))
    assert [r.world_size for r in recs if type(r) is GroupFormed] == [8]
    assert [r.nnodes for r in recs if type(r) is NodeCount] == [2]
    assert 8 in [r.world_size for r in recs if type(r) is WorldSize]
    some = list(parse_torch_lines(enumerate(lines[:5], 1), "g"))  # ranks 0-2 of 8 missing: nothing formed
    assert not [r for r in some if type(r) in (GroupFormed, NodeCount)]


def test_composers_config_block_gives_the_world_once():
    from ncclscope.sources.records import NodeCount, WorldSize
    from ncclscope.sources.torch_log import parse_torch_lines

    block = ["Config:", "num_gpus_per_node: 8", "num_nodes: 2", "rank_zero_seed: 17"]
    recs = list(parse_torch_lines(enumerate(block + block, 1), "f"))  # printed once per rank
    assert [r.world_size for r in recs if type(r) is WorldSize] == [16]
    assert [r.nnodes for r in recs if type(r) is NodeCount] == [2]
    assert not [r for r in parse_torch_lines(enumerate(["num_nodes: 2"], 1), "g") if type(r) is WorldSize]
