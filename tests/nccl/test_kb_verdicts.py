"""The knowledge base decides the verdict where its match is the job's first failure: each entry argues
for one by area (host, container, driver, fabric set up wrong -> config_error; IB, socket, proxy -> crash,
no culprit rank) or by its own ``verdict``; a setting the entry names as the cause links the setting to
the WARN after it. Cases in tests/data/kb_verdicts/ are logs in the shapes of the threads their
SOURCE.md cites."""
from __future__ import annotations

from pathlib import Path

import pytest
from ncclscope.analysis import analyze_paths
from ncclscope.nccl import failures

DATA = Path(__file__).resolve().parents[1] / "data" / "kb_verdicts"


def _analyze(case: str):
    files = sorted(p for p in (DATA / case).iterdir() if p.is_file() and p.name != "SOURCE.md")
    return analyze_paths(files, cache=False)


def test_every_entry_argues_for_a_known_verdict():
    for e in failures.entries():
        assert e.verdict in (None, "config_error", "crash"), e.id
        if e.kind == "note":
            assert e.verdict is None, f"{e.id}: a note argues for no verdict"
        if e.kind == "config":
            assert e.verdict == "config_error", e.id
        assert all(s.startswith("NCCL_") for s in e.settings), e.id


@pytest.mark.parametrize("area, verdict", [("shm", "config_error"), ("nvls", "config_error"),
                                           ("topology", "config_error"), ("proxy", "crash")])
def test_verdict_by_area(area, verdict):
    errors = [e for e in failures.entries() if e.area == area and e.kind == "error" and e.id not in SETTING_FREE]
    assert errors and all(e.verdict == verdict for e in errors), [(e.id, e.verdict) for e in errors]


# entries of a config_error area whose message names no setting the user chose: crashes (a setting the entry lists,
# when the job set it, still makes them config errors)
SETTING_FREE = {"shm-attach-missing": (), "topo-ring-inconsistent": ("NCCL_HOSTID", "NCCL_GRAPH_FILE", "NCCL_TOPO_FILE")}


@pytest.mark.parametrize("eid", sorted(SETTING_FREE))
def test_setting_free_entries_of_config_areas_are_crashes(eid):
    e = failures.by_id(eid)
    assert e.verdict == "crash" and e.settings == SETTING_FREE[eid]


def test_entry_verdict_overrides_area_and_bad_value_is_refused():
    assert failures.by_id("init-duplicate-gpu").verdict == "config_error"
    assert failures.by_id("socket-bind-address").verdict == "config_error"  # a socket entry: the host's setup
    assert failures.by_id("ib-retry-exceeded").verdict == "crash"
    bad = failures.by_id("shm-open")
    text = f'''[[entry]]
id = "x"
area = "shm"
verdict = "maybe"
pattern = "abc"
releases = ["NCCL 2.18"]
cause = "c"
fix = "f"
link = "{bad.link}"
examples = [{{ release = "NCCL 2.18", text = "abc" }}]
'''
    with pytest.raises(failures.KnowledgeBaseError, match="verdict"):
        failures.parse(text)


def test_shm_segment_in_a_container_is_a_config_error():
    a = _analyze("shm_segment_torchrun_2186")
    assert a.decision.verdict.value == "config_error"
    assert a.decision.culprit_ranks == ()
    assert any(f.data.get("entry") == "shm-segment" and "/dev/shm" in f.message for f in a.findings)


def test_ib_completion_error_is_the_cause_and_the_remote_error_its_echo():
    a = _analyze("ib_status12_remote_echo_2215")
    assert a.decision.verdict.value == "crash"
    assert a.decision.culprit_ranks == ()  # the link failed, not a rank's code
    assert "status=12" in a.decision.headline and "Got completion" in a.decision.headline
    states = {r: s for r, s, _ in a.decision.states}
    assert states[2] == "network_error"  # the WARN is a failure on rank 2's time line, like an exception
    assert states[0] == "remote_failure"  # rank 0's ncclRemoteError is its echo


def test_topo_file_set_then_attribute_missing_names_the_setting():
    a = _analyze("topo_file_arch_mpirun_2193")
    assert a.decision.verdict.value == "config_error"
    f = next(f for f in a.findings if f.data.get("entry") == "topo-xml-attribute")
    assert f.data.get("settings") == ["NCCL_TOPO_FILE"]
    assert "NCCL_TOPO_FILE=/opt/cluster/topo-a100.xml" in f.message
    assert any("set by environment" in e.text for e in f.evidence)


def test_a_helper_threads_socket_warn_in_a_job_that_goes_on_is_no_crash():
    a = _analyze("bootstrap_socket_training_goes_on_2111")
    assert a.decision.verdict.value not in ("crash", "config_error")


def test_last_error_duplicate_gpu_is_a_config_error_without_warn_lines():
    a = _analyze("last_error_duplicate_gpu_torchrun_2190")
    assert a.decision.verdict.value == "config_error"
    assert a.decision.culprit_ranks == ()
    f = next(f for f in a.findings if f.data.get("entry") == "init-duplicate-gpu")
    assert f.ranks == (1, 2) and "Duplicate GPU detected" in f.message


def test_stub_driver_warn_is_a_config_error():
    a = _analyze("stub_driver_warn_mpirun_2120")
    assert a.decision.verdict.value == "config_error"
    assert any(f.data.get("entry") == "cuda-stub-driver" and "stubs" in (f.hint or "") for f in a.findings)


def test_remote_error_whose_last_error_is_an_ib_completion_error_is_a_network_crash():
    a = _analyze("remote_error_last_error_ib_2214")
    assert a.decision.verdict.value == "crash"
    assert a.decision.culprit_ranks == ()
    assert dict((r, s) for r, s, _ in a.decision.states).get(3) == "network_error"


def test_connect_refused_after_loopback_chosen_on_two_hosts_is_a_config_error():
    a = _analyze("loopback_connect_refused_2hosts_278")
    assert a.decision.verdict.value == "config_error"
    assert a.decision.culprit_ranks == ()
    assert "NCCL_SOCKET_IFNAME" in (a.decision.headline + " ".join(f.hint or "" for f in a.findings))


def test_torch_capability_warning_before_an_nccl_cuda_error_is_a_config_error(tmp_path):
    """torch's start-up warning that the build has no kernels for the GPU (YijinHuang/SSiT#19 shape, mp.spawn):
    the NCCL 'unhandled cuda error' after it is its consequence; a config error naming the capability, no culprit."""
    (tmp_path / "train.log").write_text(
        "/opt/conda/lib/python3.8/site-packages/torch/cuda/__init__.py:143: UserWarning: \n"
        "NVIDIA GeForce RTX 4080 with CUDA capability sm_89 is not compatible with the current PyTorch installation.\n"
        "The current PyTorch install supports CUDA capabilities sm_37 sm_50 sm_60 sm_70 sm_75 compute_37.\n"
        "-- Process 1 terminated with the following error:\n"
        "Traceback (most recent call last):\n"
        '  File "/work/train.py", line 88, in worker\n'
        "    dist.barrier()\n"
        "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:47, unhandled cuda error, "
        "NCCL version 21.0.3\n"
        "ncclUnhandledCudaError: Call to CUDA function failed.\n")
    a = analyze_paths([tmp_path / "train.log"], cache=False)
    assert a.decision.verdict.value == "config_error" and a.decision.culprit_ranks == ()
    f = next(f for f in a.findings if f.data.get("entry") == "torch-arch-unsupported")
    assert "sm_89" in f.message and "torch" in (f.hint or "")


def test_capability_warning_in_a_job_that_did_not_fail_is_only_a_warning(tmp_path):
    (tmp_path / "run.log").write_text(
        "NVIDIA GeForce RTX 4080 with CUDA capability sm_89 is not compatible with the current PyTorch installation.\n"
        "[rank0]:[I611 16:40:12.118 ProcessGroupNCCL.cpp:1003] [PG ID 0 PG GUID 0(default_pg) Rank 0] Using non-blocking mode: 0\n")
    a = analyze_paths([tmp_path / "run.log"], cache=False)
    f = next(f for f in a.findings if f.data.get("entry") == "torch-arch-unsupported")
    assert f.verdict is None and f.severity.value == "warning"


def test_uncorrectable_nvlink_abort_named_by_the_test_harness_is_that_process_crash(tmp_path):
    """PyTorch's own multi-process tests (easybuilders/easybuild-easyconfigs#13237 shape): the C++ runtime's abort
    ('terminate called ... c10::CUDAError' / 'what(): CUDA error: uncorrectable NVLink error ...'), then the harness's
    'Process N exited with error code C': rank N crashed on a hardware link fault."""
    (tmp_path / "test.log").write_text(
        "INFO:torch.testing._internal.common_distributed:Started process 0 with pid 5101\n"
        "INFO:torch.testing._internal.common_distributed:Started process 1 with pid 5102\n"
        "terminate called after throwing an instance of 'c10::CUDAError'\n"
        "  what():  CUDA error: uncorrectable NVLink error detected during the execution\n"
        "Exception raised from create_event_internal at ../c10/cuda/CUDACachingAllocator.cpp:1055 (most recent call first):\n"
        "ERROR:torch.testing._internal.common_distributed:Process 1 exited with error code 10 and exception:\n")
    a = analyze_paths([tmp_path / "test.log"], cache=False)
    assert a.decision.verdict.value == "crash" and a.decision.culprit_ranks == (1,)
    assert any("NVLink" in f.message and "nvlink" in (f.hint or "") for f in a.findings)


def test_known_release_and_setting_traps_are_notes_naming_their_workaround(tmp_path):
    """NCCL 2.27.7's RAS segfault (NVIDIA/nccl#1996), 2.22.3 with NCCL_IB_ROCE_VERSION_NUM (NVIDIA/nccl#1538), torch
    2.7.0's non-blocking mode (pytorch/pytorch#153960): notes that name the workaround, arguing for no verdict."""
    (tmp_path / "a.log").write_text(
        "node7:4101:4101 [0] NCCL INFO NCCL version 2.27.7+cuda12.9\n"
        "node7:4101:4101 [0] NCCL INFO NCCL_IB_ROCE_VERSION_NUM set by environment to 2.\n"
        "[rank0]:[I519 11:02:45.207731190 ProcessGroupNCCL.cpp:1003] [PG ID 0 PG GUID 0(default_pg) Rank 0] "
        "Using non-blocking mode: 1\n")
    a = analyze_paths([tmp_path / "a.log"], cache=False)
    notes = {f.data.get("entry"): f for f in a.findings if f.kind.value == "note"}
    assert "NCCL_RAS_ENABLE=0" in notes["release-2.27.7-ras"].hint
    assert "NCCL_IB_GID_INDEX" in notes["env-roce-version-num-2.22"].hint
    assert "TORCH_NCCL_USE_COMM_NONBLOCKING=0" in notes["torch-2.7.0-nonblocking"].hint
    assert all(f.verdict is None for f in notes.values())


def test_init_that_stops_in_nvls_setup_gets_a_note_naming_the_step(tmp_path):
    """Two ranks whose log ends at 'NVLS Bind mem' after Init START (NVIDIA/nccl-tests#216 shape): a note saying init
    stopped in NVLS set-up with the Fabric Manager and NCCL_NVLS_ENABLE=0 in its fix; none once init completed."""
    head = "node4:{pid}:{pid} [{d}] NCCL INFO "
    lines = []
    for d, pid in ((0, 7101), (1, 7102)):
        h = head.format(pid=pid, d=d)
        lines += [(f"{h}ncclCommInitRank comm 0x55{d}0 rank {d} nranks 2 cudaDev {d} nvmlDev {d} busId {d}8000 "
                   "commId 0x1d3f2a8b7c6e5f40 - Init START"),
                  f"{h}NVLS multicast support is available on dev {d}",
                  f"{h}NVLS Bind mem 0xa{d}0000000 UC handle 0x7f5c10cdb240 MC handle 0x7f5c10cdaa20 size 1073741824"]
    (tmp_path / "run.log").write_text("\n".join(lines) + "\n")
    a = analyze_paths([tmp_path / "run.log"], cache=False)
    (f,) = [f for f in a.findings if f.data.get("entry") == "nvls-init-stopped"]
    assert f.ranks == (0, 1) and "NCCL_NVLS_ENABLE=0" in (f.hint or "") and f.verdict is None
    done = lines + [f"node4:{pid}:{pid} [{d}] NCCL INFO ncclCommInitRank comm 0x55{d}0 rank {d} nranks 2 cudaDev {d} "
                    f"nvmlDev {d} busId {d}8000 commId 0x1d3f2a8b7c6e5f40 - Init COMPLETE" for d, pid in ((0, 7101), (1, 7102))]
    (tmp_path / "run.log").write_text("\n".join(done) + "\n")
    a = analyze_paths([tmp_path / "run.log"], cache=False)
    assert not [f for f in a.findings if f.data.get("entry") == "nvls-init-stopped"]
