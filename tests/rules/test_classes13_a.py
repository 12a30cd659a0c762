"""Round thirteen's cases (tests/data/classes13/c13a_*, c13b_*). vLLM 0.11's logger heads name the module's path
under the package (``ERROR 10-13 11:29:53 [v1/executor/multiproc_executor.py:597] ...``): the head is peeled as the
file-only head of earlier releases was, so the worker's traceback under it is read; a run-on paste whose line breaks
became spaces is cut at each full vLLM head inside a line that starts with one. A server whose start-up ended
(its ready line the last progress print, nothing failed) is a normal start: healthy, possible, covering the start
only. One process's stack dump alone, its main thread inside a collective (a ``torch.distributed`` frame, or a
framework's ``wait`` on a collective's handle under a caller named for it: DeepSpeed's ZeRO-3 all-gather), in a job that
printed nothing after it and did not end: a hang, possible, no culprit. Gloo's ``Unable to find address for: <iface>`` (``GLOO_SOCKET_IFNAME`` naming no interface of the host, NCCL's
``^lo,docker`` syntax copied into it) is a config error, not a crash of the rank that raised it."""
from __future__ import annotations

import pytest
from class_cases import CaseSet
from wild_cases import DATA

SET = CaseSet(DATA / "classes13")
MINE = SET.names("c13a_", "c13b_", "c13c_", "c13d_")


@pytest.mark.parametrize("name", MINE)
def test_class_case(name):
    SET.check(name)


@pytest.mark.parametrize("line,body", [
    ("ERROR 10-13 11:29:53 [v1/executor/multiproc_executor.py:597] RuntimeError: NCCL error: unhandled system error",
     "RuntimeError: NCCL error: unhandled system error"),
    ("INFO 03-02 09:14:44 [distributed/device_communicators/pynccl.py:103] vLLM is using nccl==2.27.3",
     "vLLM is using nccl==2.27.3"),
    ("ERROR 11-25 08:17:30 [worker.py:87] RuntimeError: boom", "RuntimeError: boom"),
])
def test_vllm_heads_with_a_module_path_are_peeled(line, body):
    from ncclscope.sources.lines import TOOL_PREFIX_RE

    m = TOOL_PREFIX_RE.match(line)
    assert m is not None and line[m.end():] == body


@pytest.mark.parametrize("text,entry", [
    ("RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:84] ifa != nullptr. Unable to "
     "find address for: ^lo", "gloo-interface-not-found"),
    ("[rank2]: RuntimeError: [enforce fail at /pytorch/third_party/gloo/gloo/transport/tcp/device.cc:84] ifa != "
     "nullptr. Unable to find address for: eth9", "gloo-interface-not-found"),
    ("RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error",
     "gloo-full-mesh-connect"),
])
def test_gloos_missing_interface_is_its_own_entry(text, entry):
    from ncclscope.detectors.catalogue import classify

    k = classify(text)
    assert k is not None and k.id == entry


def test_a_server_ready_line_covers_the_start_only():
    from ncclscope.rules.healthy import server_ready

    assert server_ready(True, False, False, None) is not None
    assert server_ready(True, True, False, None) is None  # something failed: another rule's story
    assert server_ready(True, False, True, None) is None  # a stall was seen
    assert server_ready(True, False, False, 1) is None
    assert server_ready(False, False, False, None) is None


@pytest.mark.parametrize("frames,coll", [
    ([("wait", "deepspeed/runtime/zero/partition_parameters.py", 772),
      ("__all_gather_params_", "deepspeed/runtime/zero/partition_parameters.py", 1152)], "all_gather"),
    ([("wait", "megatron/core/overlap.py", 40), ("finish", "megatron/core/overlap.py", 60),
      ("_reduce_scatter_grads", "megatron/core/overlap.py", 90)], "reduce_scatter"),
    ([("wait", "threading.py", 324), ("wait", "threading.py", 607), ("run", "tqdm/_monitor.py", 60)], None),
    ([("_poll", "multiprocessing/connection.py", 424), ("_try_get_data", "torch/utils/data/dataloader.py", 1133)],
     None),
    ([("wait", "a.py", 1), ("b", "a.py", 2), ("c", "a.py", 3), ("d", "a.py", 4), ("e", "a.py", 5),
      ("broadcast_params", "a.py", 6)], None),  # the collective's name too far above the wait
])
def test_a_frameworks_wait_on_a_collectives_handle(frames, coll):
    from ncclscope.sources.stack_dump import collective_of

    assert collective_of(frames) == coll


def test_one_dump_in_a_collective_is_a_possible_hang():
    from ncclscope.model import Verdict
    from ncclscope.rules.stacks import lone_dump
    from ncclscope.sources.stack_dump import GPU_WAIT

    r = lone_dump(["all_reduce"])
    assert r is not None and r.verdict is Verdict.HANG and r.culprits == () and r.op == "all_reduce"
    assert lone_dump([None]) is None  # outside any collective: nothing said
    assert lone_dump([GPU_WAIT]) is None  # on its stream only
    assert lone_dump(["all_reduce", "broadcast"]) is None  # two collectives: not one story
    assert lone_dump([]) is None


def test_a_run_on_paste_is_cut_at_each_full_head():
    from ncclscope.sources.lines import split_glued

    head = "ERROR 11-04 18:02:56 [v1/executor/multiproc_executor.py:597] "
    line = f"{head}WorkerProc failed to start. {head}Traceback (most recent call last): {head}RuntimeError: boom"
    assert [p.rstrip("\n ") for p in split_glued(line)] == [
        f"{head}WorkerProc failed to start.", f"{head}Traceback (most recent call last):", f"{head}RuntimeError: boom"]
    # a line that does not start with a logger head is one record, whatever it quotes
    quoted = f"user note: the log said {head}RuntimeError: boom"
    assert split_glued(quoted) == [quoted]
    # a head without its bracket after a space is no cut point (only the full head is)
    plain = "INFO 11-04 18:02:56 [a.py:1] moved to INFO 11-04 18:02:57 state"
    assert split_glued(plain) == [plain]
