"""Round fourteen's cases (tests/data/classes14/), written from the eleventh held-out set's misreadings:
- ``c14a_``: a sustained stretch of the program's own step times several times its usual pace, in a job where nothing
  failed, is degraded (possible); single slow steps (validation, a checkpoint) are not;
- ``c14b_``: an nccl-tests table behind a launcher's process prefix (Ray's, SkyPilot's ``(head, rank=0, pid=N)``)
  in front of mpirun's tag is read; horovodrun's rank tag without its colon is peeled; NCCL's lines behind a runner's
  rank tag alone, with a topology dump beside them, are NCCL's own start (healthy, possible), not a console that fell
  silent;
- ``c14c_``: every rank's last print announcing a blocking call of another kind (tearing its process groups down,
  a pipeline stage's send or receive, torch.distributed.pipelining's own shape-inference lines) with nothing after
  is a hang with no culprit; ``[rN]`` is a rank tag;
- ``c14d_``: PyTorch's ``Distributed package doesn't have NCCL built in`` is a config error (a torch build without
  the backend the job chose)."""
from __future__ import annotations

import pytest
from class_cases import CaseSet
from wild_cases import DATA

SET = CaseSet(DATA / "classes14")
MINE = SET.names()


@pytest.mark.parametrize("name", MINE)
def test_class_case(name):
    SET.check(name)


@pytest.mark.parametrize("line,rank,body", [
    ("(head, rank=0, pid=4127) [1,3]<stdout>:#  Rank  3 Group  0 Pid 12 on h device 3 [0x1] GPU", 3,
     "#  Rank  3 Group  0 Pid 12 on h device 3 [0x1] GPU"),
    ("[1]<stdout>[1] NCCL INFO Using network Socket", 1, "NCCL INFO Using network Socket"),
    ("[r7] tearing down process groups", 7, "tearing down process groups"),
])
def test_prefixes_of_runners_and_prints(line, rank, body):
    from ncclscope.sources.lines import strip_tool_prefixes
    from ncclscope.sources.nccl_tests import launcher_prefix_off

    got = strip_tool_prefixes(line)
    if line.startswith("("):
        assert launcher_prefix_off(line).startswith("[1,3]<stdout>:")
        assert launcher_prefix_off("node2: Test NCCL failure common.cu:1 'x'") == "node2: Test NCCL failure common.cu:1 'x'"
    else:
        assert got == (rank, body)


@pytest.mark.parametrize("text,waits", [
    ("tearing down process groups", True),
    ("rank 3 destroying process group", True),
    ("Shape inference: stage 1 receiving from stage 0", True),
    ("sending to stage 1", True),
    ("sending the report to the dashboard", False),
    ("receiving data from the loader", False),
])
def test_prints_that_a_rank_is_inside_a_blocking_call(text, waits):
    from ncclscope.sources.tool_lines import progress_wait

    assert (progress_wait(text, "f", 1, text, 0) is not None) is waits


def test_the_backend_not_built_entry():
    from ncclscope.detectors.catalogue import classify

    k = classify("[rank0]: RuntimeError: Distributed package doesn't have NCCL built in")
    assert k is not None and k.id == "c10d-backend-not-built" and k.verdict == "config_error"
    assert classify("RuntimeError: ProcessGroupNCCL is only supported with GPUs, no GPUs found!").id == "c10d-no-gpus"
