"""Round eleven's cases (tests/data/classes11/c11a_*): start-ups that stall in their first exchanges between the GPUs
and read unknown. vLLM's front-end waiting for output from its engine ("Waiting for output from MQLLMEngine.") at the
end of a log whose server never came up; a log that ends at DeepSpeed's engine start ("DeepSpeed info: version=..."),
right before the engine's first broadcast of the model's parameters."""
from __future__ import annotations

import pytest
from class_cases import CaseSet
from wild_cases import DATA

SET = CaseSet(DATA / "classes11")
MINE = SET.names("c11a_")


@pytest.mark.parametrize("name", MINE)
def test_class_case(name):
    SET.check(name)


@pytest.mark.parametrize("line,wait", [
    ("DEBUG 03-03 09:13:48 client.py:191] Waiting for output from MQLLMEngine.", True),
    ("(APIServer pid=1) DEBUG 08-04 09:14:06 [client.py:191] Waiting for output from MQLLMEngine.", True),
    ("INFO 03-03 09:13:48 engine.py:275] Added request cmpl-1.", False),
    ("Waiting for output from the engine core", False),
])
def test_the_front_ends_wait_for_its_engine(line, wait):
    from ncclscope.sources.framework_lines import framework_line

    whats = [getattr(r, "what", None) for r in framework_line("f", 1, line, line, None)]
    assert ("engine_wait" in whats) is wait


@pytest.mark.parametrize("line,start", [
    ("[2023-10-01 14:08:09,902] [INFO] [logging.py:96:log_dist] [Rank 0] DeepSpeed info: version=0.10.3, "
     "git-hash=unknown, git-branch=unknown", True),
    ("[Rank 0] DeepSpeed info: version=0.14.2+cu121, git-hash=abc1234, git-branch=master", True),
    ("[Rank 0] DeepSpeed Flops Profiler Enabled: False", False),
    ("ds_report: DeepSpeed general environment info: deepspeed info ...... 0.14.2", False),
])
def test_deepspeeds_engine_start_line(line, start):
    from ncclscope.detectors.framework import DS_ENGINE_RE

    assert bool(DS_ENGINE_RE.search(line)) is start


@pytest.mark.parametrize("line,fired", [
    ("[2026-06-16 14:08:42 TP2] Watchdog timeout (self.watchdog_timeout=300)", True),
    ("[2026-06-16 14:08:42 TP2] Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)", True),
    ("[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE)", False),
])
def test_sglangs_scheduler_watchdog_in_both_wordings(line, fired):
    from ncclscope.sources.framework_lines import framework_line

    whats = [getattr(r, "what", None) for r in framework_line("f", 1, line, line, None)]
    assert ("scheduler_watchdog" in whats) is fired


def test_ranks_in_no_collective_all_but_one_at_one_line_name_the_one_apart():
    from ncclscope.model import Verdict
    from ncclscope.rules.stacks import APART, Position, read_stacks

    at, off = "step (t.py:141)", "loader (t.py:163)"
    r = read_stacks([Position(0, None, at), Position(1, None, at), Position(2, None, off), Position(3, None, at)])
    assert r is not None and r.verdict is Verdict.HANG and r.culprits == (2,) and r.waiting == (0, 1, 3) and r.op == APART
    assert read_stacks([Position(0, None, at), Position(1, None, off)]) is None  # two ranks apart: neither is odd
    assert read_stacks([Position(0, None, at), Position(1, None, off), Position(2, None, "x (t.py:9)")]) is None
    assert read_stacks([Position(0, None, at), Position(1, None, off), Position(2, None, off),
                        Position(3, None, at)]) is None  # two against two
    assert read_stacks([Position(r, None, at) for r in range(3)]) is None  # all together: nothing to tell
