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
    errors = [e for e in failures.entries() if e.area == area and e.kind == "error"]
    assert errors and all(e.verdict == verdict for e in errors), [(e.id, e.verdict) for e in errors]


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
