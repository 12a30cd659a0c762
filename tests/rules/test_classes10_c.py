"""Round ten's cases (tests/data/classes10/c10c_*): where a world's size is stated. torchtune's ``tune run
--nproc_per_node N <recipe>`` passes torchrun's flags on as they are; Accelerate's print of its state has a bare
``Num processes: N`` line; RETURNN's join line ``Torch: Distributed: rank R, size S, local rank L, local size LS``
states the world's size (and one node where the local size is the world's). Each is read over a world guessed from
the highest rank a log shows. RETURNN's exception hook names a process by its pid (``Unhandled exception ... proc P.``):
the rank that pid joined as. PyTorch's DETAIL reports in which every side printed its own fingerprint of one call (same
op and SequenceNumber, another shape) name no culprit; a rank in another call is still named. vLLM's driver, printing
its broadcast queue's handle with no Ray prefix, is rank 0 on a node of the job beside its workers' ``ip=`` nodes."""
from __future__ import annotations

import pytest
from class_cases import CaseSet
from wild_cases import DATA

SET = CaseSet(DATA / "classes10")
MINE = SET.names("c10c_")


@pytest.mark.parametrize("name", MINE)
def test_class_case(name):
    SET.check(name)


@pytest.mark.parametrize("body,n", [
    ("Num processes: 8", 8), ("  Num processes: 2 ", 2),
    ("***** Num processes: 8 *****", None), ("Num processes: 0", None),
    ("INFO - __main__ - Distributed environment: MULTI_GPU  Backend: nccl", None),
])
def test_accelerate_state_line(body, n):
    from ncclscope.sources.program_facts import accelerate_processes

    assert accelerate_processes(body) == n


@pytest.mark.parametrize("body,want", [
    ("Torch: Distributed: rank 1, size 4, local rank 1, local size 4", (1, 4, True)),
    ("Torch: Distributed: rank 5, size 8, local rank 1, local size 4", (5, 8, False)),
    ("Torch distributed initialized. Hostname cn-31, pid 71203, rank 0, local_rank 0, local_size 4, size 4",
     (0, 4, True)),
    ("Torch: Hostname gpu-n17, pid 5121, using GPU 1.", None),
])
def test_returnn_join_lines(body, want):
    from ncclscope.sources.program_facts import returnn_world

    assert returnn_world(body) == want


@pytest.mark.parametrize("line,n", [
    ("$ tune run --nproc_per_node 8 full_finetune_distributed --config ./c.yaml", 8),
    ("Running: tune run --nnodes 1 --nproc_per_node 2 full_finetune_distributed --config llama3/8B_full", 2),
    ("tune run --nnodes 2 --nproc_per_node 8 --rdzv-endpoint node-a:29400 full_finetune_distributed", 16),
    ("tune run lora_finetune_single_device --config llama3/8B_lora_single_device", None),
    ("please further tune run-time settings --nproc_per_node 4", None),
])
def test_tune_run_counts_as_torchrun(line, n):
    from ncclscope.sources.records import LaunchedTasks
    from ncclscope.sources.torch_log import _launched, _State

    head = ("f", 1, line, None, None, None, None)
    got = [r.count for r in _launched(_State("f"), head, line) if isinstance(r, LaunchedTasks)]
    assert got == ([n] if n else [])


def _fp(seq: int, op: str, shape: str) -> str:
    return f"CollectiveFingerPrint(SequenceNumber={seq}, OpType={op}, TensorShape=[{shape}], TensorDtypes=Float)"


def test_detail_reports_of_one_call_from_both_sides_name_nobody():
    from ncclscope.rules.desync import detail_verdict

    a, b = _fp(9, "ALLREDUCE", "100"), _fp(9, "ALLREDUCE", "73")
    both = [([0, 3], [a, b]), ([1, 3], [a, b]), ([2, 3], [a, b]), ([3, 0], [b, a])]
    dv = detail_verdict(both)
    assert dv is not None and dv.culprits == () and dv.seq == 9
    one_side = [([r, 3], [a, b]) for r in (0, 1, 2)]  # rank 3 never reported: the majority names it
    dv = detail_verdict(one_side)
    assert dv is not None and dv.culprits == (3,)
    c = _fp(9, "BROADCAST", "1")  # rank 3 in another call: elsewhere, named
    dv = detail_verdict([([r, 3], [a, c]) for r in (0, 1, 2)] + [([3, 0], [c, a])])
    assert dv is not None and dv.culprits == (3,)


def test_returnn_exception_hook_names_the_rank_of_its_pid():
    from ncclscope.sources.torch_log import _returnn_process, _State

    st = _State("f")
    for line in ("Torch: Hostname gx-1, pid 71, using GPU 1.", "Torch: Distributed: rank 1, size 2, local rank 1, local size 2",
                 "Torch distributed initialized. Hostname gx-1, pid 70, rank 0, local_rank 0, local_size 2, size 2"):
        assert _returnn_process(st, line) is False
    assert st.pid_ranks == {71: 1, 70: 0}
    assert _returnn_process(st, "Unhandled exception <class 'RuntimeError'> in thread <_MainThread(MainThread, "
                                "started 1398)>, proc 71.") is True
    assert st.spawn_rank == 1
    assert _returnn_process(st, "Unhandled exception <class 'KeyError'> in thread <T>, proc 99.") is True
    assert st.spawn_rank is None
