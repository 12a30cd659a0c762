"""Round thirty's cases (tests/data/classes30/), written from the twenty-third held-out set's misreadings: ranks 1 to k
timing out while rank 0's own progress shows it at work is rank 0's hang (``rules.hang.implied_world``,
``rules.facts.rank_zero_busy``); an untagged exception line whose message the knowledge base knows is a failure; a
traceback whose frames the paste left out ends at its exception's line whatever the class is called; torch 1.x's
``THCudaCheck FAIL`` is a CUDA error; a few NCCL INFO lines quoted alone are no log that stopped in the set-up
(``rules.healthy.quoted_info``); a message the knowledge base knows, quoted alone without its head or as torch's source
line, is read (``ingest.quoted``); new entries: a GPU's PCI path missing from /sys, a serving framework's GPU index
already taken, a checkpoint's model-parallel parts against the world, Transformer Engine's userbuffers unsupported."""
from __future__ import annotations

import pytest
from class_cases import CaseSet
from wild_cases import DATA

SET = CaseSet(DATA / "classes30")
MINE = SET.names()


@pytest.mark.parametrize("name", MINE)
def test_class_case(name):
    SET.check(name)


@pytest.mark.parametrize("seen,want", [
    ({1, 2, 3}, 4), ({1, 2}, 3), ({0, 1, 2}, None), ({2, 3}, None), ({1}, None), ({1, 3}, None), (set(), None),
])
def test_ranks_one_to_k_imply_rank_zero(seen, want):
    from ncclscope.rules.hang import implied_world

    assert implied_world(seen) == want


def test_an_implied_world_names_rank_zero_only_when_it_was_at_work():
    from ncclscope.model import Verdict
    from ncclscope.rules.cause import Failure
    from ncclscope.rules.exits import FailureKind
    from ncclscope.rules.shown import echoes_only

    def timeout(rank):
        return Failure(rank, FailureKind.TIMEOUT, "Watchdog caught collective operation timeout", None, ("c.txt", 10 + rank))

    fs = [timeout(r) for r in (2, 1, 3)]
    busy = echoes_only(fs, (), None, rank0_busy=True)
    assert busy is not None and busy.verdict is Verdict.HANG and busy.culprits == (0,) and busy.level == "possible"
    quiet = echoes_only(fs, (), None, rank0_busy=False)  # no sign of rank 0 at work: its lines may just be cut
    assert quiet is not None and quiet.culprits == ()


@pytest.mark.parametrize("text,entry,verdict", [
    ("Could not find real path of /sys/class/pci_bus/0000:0b/../../0000:0b:00.0", "topo-gpu-pci-path", "config_error"),
    ("Could not find real path of /sys/class/net/ib0/device", "topo-real-path", None),
    ("RuntimeError: Failed to launch model, detail: User specified GPU index 2 has been occupied with a vLLM model: m-1",
     "serving-gpu-index-occupied", "config_error"),
    ("AssertionError: Loading a checkpoint for MP=2 but world size is 8", "checkpoint-mp-world-mismatch", "config_error"),
    (("RuntimeError: /src/transformer_engine/pytorch/csrc/userbuffers/userbuffers-host.cpp:311 in function "
      "create_communicator_grouped2_mpi: CUDA Error: operation not supported"), "te-userbuffers-unsupported", "config_error"),
    ("Error: rank 5 and rank 13 both on CUDA device 9c000 (PCI 9c:00.0)", "init-duplicate-gpu", "config_error"),
])
def test_knowledge_base_entries_of_the_round(text, entry, verdict):
    from ncclscope.nccl.failures import classify

    got = classify(text)
    assert got is not None and got.id == entry
    assert (got.verdict.value if got.verdict is not None else None) == verdict


def test_a_traceback_with_its_frames_cut_ends_at_its_exception_whatever_its_class():
    from ncclscope.sources.records import DistError
    from ncclscope.sources.torch_log import parse_torch_lines

    lines = ["Traceback (most recent call last):", "etcd.EtcdKeyNotFound: Key not found : /torch/elastic/store"]
    (err,) = [r for r in parse_torch_lines(enumerate(lines, 1), "f") if isinstance(r, DistError)]
    assert (err.exc_type, err.message) == ("etcd.EtcdKeyNotFound", "Key not found : /torch/elastic/store")
    # a line of the same form with no traceback open is no exception: a log's own "name: value" line
    assert not [r for r in parse_torch_lines(enumerate(lines[1:], 1), "g") if isinstance(r, DistError)]


def test_thcudacheck_is_a_cuda_error_once():
    from ncclscope.sources.records import DistError
    from ncclscope.sources.torch_log import parse_torch_lines

    line = "THCudaCheck FAIL file=/pytorch/torch/csrc/cuda/Module.cpp line=59 error=101 : invalid device ordinal"
    errs = [r for r in parse_torch_lines(enumerate([line, line], 1), "f") if isinstance(r, DistError)]
    assert [e.message for e in errs] == ["CUDA error: invalid device ordinal"]


def test_an_untagged_exception_the_knowledge_base_knows_is_read_once():
    from ncclscope.sources.records import DistError
    from ncclscope.sources.torch_log import parse_torch_lines

    lines = ["RuntimeError: Address already in use", "RuntimeError: Address already in use",
             "ValueError: the config has no key 'lr'", "epoch 2 loss 0.31"]  # one it does not know, mid-log: not read
    errs = [r for r in parse_torch_lines(enumerate(lines, 1), "f") if isinstance(r, DistError)]
    assert [e.message for e in errs] == ["Address already in use"]


@pytest.mark.parametrize("lines,n,after,warned,want", [
    (1, 1, False, False, True), (4, 1, False, False, True), (5, 1, False, False, False),
    (4, 1, True, False, False), (4, 1, False, True, False), (4, 0, False, False, False),
])
def test_a_few_info_lines_quoted_alone_are_no_stopped_log(lines, n, after, warned, want):
    from ncclscope.rules.healthy import quoted_info

    assert (quoted_info(lines, n, after, warned, False, False, False, None) is not None) is want
    assert quoted_info(lines, n, after, warned, True, False, False, None) is None  # a communicator: not a quote


def test_quoted_messages_of_any_area_are_read_and_notes_are_not(tmp_path):
    from ncclscope.ingest.quoted import quoted_nccl_errors
    from ncclscope.sources.records import DistError, NcclWarn

    f = tmp_path / "q.txt"
    f.write_text('    raise RuntimeError("Distributed package doesn\'t have NCCL " "built in")\n'
                 "rank 3 and rank 11 both on CUDA device 1a000\n"  # NCCL's words, not naming NCCL: someone else's
                 "NCCL: rank 3 and rank 11 both on CUDA device 1a000\n"
                 "RuntimeError: CUDA error: an illegal memory access was encountered\n"  # CUDA alone: not distributed
                 "Could not find real path of /sys/class/net/ib0/device (NCCL)\n")
    got = quoted_nccl_errors(f, "q.txt")
    assert [(type(r).__name__, r.line) for r in got] == [("DistError", 1), ("NcclWarn", 3), ("NcclWarn", 5)]
    err = got[0]
    assert isinstance(err, DistError) and err.exc_type == "RuntimeError"
    assert err.message == "Distributed package doesn't have NCCL built in"
    assert isinstance(got[2], NcclWarn)  # a note of NCCL's own stays a WARN line (judged a note, no failure)


def test_a_console_that_ends_at_a_bare_exception_died_of_it():
    from ncclscope.sources.records import DistError
    from ncclscope.sources.torch_log import parse_torch_lines

    def errors(lines):
        return [(r.exc_type, r.message) for r in parse_torch_lines(enumerate(lines, 1), "f") if isinstance(r, DistError)]

    assert errors(["GPU count 4", "UnboundLocalError: local variable 'x' referenced"]) == [
        ("UnboundLocalError", "local variable 'x' referenced")]
    assert errors(["UnboundLocalError: local variable 'x' referenced", "step 3 loss 0.4"]) == []  # the log went on
    assert errors(["GPU count 4", "KeyboardInterrupt: "]) == []  # a stop, not a death


def test_one_tag_before_several_processes_on_several_gpus_is_a_task_not_a_rank():
    from ncclscope.model_build.ranks import wrapper_tasks

    a, b, c = ("h", 1), ("h", 2), ("h", 3)
    assert wrapper_tasks({a: 0, b: 0, c: 0}, {a: 0, b: 1, c: 2}) == {a, b, c}  # one MPI task, three GPUs
    assert wrapper_tasks({a: 0, b: 0}, {a: 0, b: 0}) == set()  # the same GPU again: a restart of rank 0
    assert wrapper_tasks({a: 0, b: 1}, {a: 0, b: 1}) == set()  # a tag each: their ranks
    assert wrapper_tasks({a: 0, b: 0}, {a: 0, b: None}) == set()  # a device not known: nothing said
    assert wrapper_tasks({a: 0, ("g", 9): 0}, {a: 0, ("g", 9): 1}) == set()  # other hosts: another job's task 0
