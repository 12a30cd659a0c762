"""Round seven's cases (tests/data/classes7/c7c_*): setup faults read as a hang or a crash (a libnccl other than the
one the caller was built for), the knowledge base's words for RoCE GIDs a container cannot read and for a serving
framework's custom all-reduce on GPUs without peer access."""
from __future__ import annotations

import pytest
from class_cases import CaseSet
from wild_cases import DATA

from ncclscope.nccl.failures import EntryVerdict, classify

SET = CaseSet(DATA / "classes7")
MINE = SET.names("c7c_")


@pytest.mark.parametrize("name", MINE)
def test_class_case(name):
    SET.check(name)


def test_gid_read_failures_name_the_gid_index():
    for text in ("NET/IB: read failed in ncclIbRoceGetVersionNum: Invalid argument",
                 "NET/IB: open failed in ncclIbRoceGetVersionNum: No such file or directory"):
        k = classify(text)
        assert k is not None and k.id == "ib-roce-gid-read" and "NCCL_IB_GID_INDEX" in k.hint


def test_peer_access_names_the_custom_all_reduce():
    k = classify("RuntimeError: CUDART error: peer access is not supported between these two devices")
    assert k is not None and "--disable-custom-all-reduce" in k.hint


def test_config_struct_rejected_is_a_setup_error():
    for text in ("Invalid config blocking attribute value -2147483648",
                 "ncclConfig_t argument not initialized via NCCL_CONFIG_INITIALIZER"):
        k = classify(text)
        assert k is not None and k.verdict == EntryVerdict.CONFIG_ERROR


def test_an_empty_local_gid_is_a_pinned_index_and_a_real_one_is_not():
    from ncclscope.detectors.pinned import empty_gid

    base = ("Call to ibv_modify_qp failed with 61 No data available, on dev mlx5_1:1, curr state INIT, next state RTR, "
            "local GID index 3, local GID {}, remote GID ::ffff:10.0.0.2")
    assert empty_gid(base.format("::")) == ("3", "mlx5_1:1")
    assert empty_gid(base.format("::ffff:10.0.0.1")) is None
    assert empty_gid("Call to ibv_modify_qp failed with error Connection timed out") is None


def test_a_command_line_sets_the_jobs_environment_but_advice_does_not():
    from ncclscope.sources.command_env import command_settings

    def got(line: str) -> dict[str, str]:
        return {e.name: e.value for e in command_settings("f", 1, line, line)}

    assert got("$ NCCL_SHM_DISABLE=1 CUDA_LAUNCH_BLOCKING=1 torchrun --nproc_per_node=2 a.py") == {
        "NCCL_SHM_DISABLE": "1", "CUDA_LAUNCH_BLOCKING": "1"}
    assert got("mpirun -np 2 -x NCCL_IB_HCA=mlx5_0 -x LD_LIBRARY_PATH ./all_reduce_perf") == {"NCCL_IB_HCA": "mlx5_0"}
    assert got("hint: rerun with NCCL_P2P_DISABLE=1 to check") == {}


def test_the_first_work_timed_out_with_none_completed_is_work_one():
    from ncclscope.model_build.events import completed_before

    assert completed_before(1, -1) == 0
    assert completed_before(6118, 6117) == 6117
    assert completed_before(None, -1) == -1


def test_vllm_engine_line_without_a_release_states_the_world():
    from ncclscope.sources.framework_lines import framework_line
    from ncclscope.sources.records import WorldSize

    line = ("INFO 01-09 14:02:44 llm_engine.py:70] Initializing an LLM engine with config: model='/m', "
            "tokenizer='/m', dtype=torch.float16, tensor_parallel_size=4, quantization=None, seed=0)")
    assert [r.world_size for r in framework_line("f", 1, line, line, None) if isinstance(r, WorldSize)] == [4]


def test_a_programs_own_prints_state_torch_and_the_world():
    from ncclscope.sources.program_facts import printed_torch, returnn_world

    assert printed_torch("PyTorch: 2.1.0+cu121") == "2.1.0+cu121"
    assert printed_torch("[env] rank=0 world=2 torch=2.6.0+cu126 cuda=12.6") == "2.6.0+cu126"
    assert printed_torch("torch.distributed: 2.1.0 is used") is None
    line = "Torch distributed initialized. Hostname cn-1, pid 7, rank 5, local_rank 1, local_size 4, size {}"
    assert returnn_world(line.format(8)) == (5, 8, False)
    assert returnn_world(line.format(4)) == (5, 4, True)


def test_custom_all_reduce_note_only_where_the_job_stalled():
    def noted(name: str) -> bool:
        return any("custom all-reduce" in f.message for f in SET.analysis(name).findings)

    assert noted("c7c_vllm_mp_tp2_allreduce_stall_custom_ar_registered")
    assert not noted("c7c_vllm_mp_tp4_custom_allreduce_peer_access")  # a crash at start-up, no stall: no note
