"""Round twenty-one's cases (tests/data/classes21/), written from the sixteenth held-out set's misreadings: an nccl-tests
summary of values out of bounds is a failure of the collectives (wrong results), not a sweep that stopped; the raylet's
report of a worker that died, before the others' timeouts, is the first failure (after them, their echo); a launcher
that refuses its own command line (its argument parser, DeepSpeed's runner with no address for a node) is a config
error; pdsh's host prefix is peeled for a host named without a digit; machines whose launchers each say they run as the
same node rank of a multi-node job are a config error."""
from __future__ import annotations

import pytest
from class_cases import CaseSet
from wild_cases import DATA

SET = CaseSet(DATA / "classes21")
MINE = SET.names()


@pytest.mark.parametrize("name", MINE)
def test_class_case(name):
    SET.check(name)


@pytest.mark.parametrize("stated,found", [
    ([(3, 0, "a11"), (3, 0, "a12"), (3, 0, "a13")], (0, 3, ("a11", "a12", "a13"))),
    ([(2, 0, "n1"), (2, 1, "n2")], None),  # distinct ranks: the right launch
    ([(2, 0, "n1"), (2, 0, "n1")], None),  # one machine saying it twice (a relaunch)
    ([(1, 0, "n1"), (1, 0, "n2")], None),  # single-node jobs
])
def test_machines_sharing_a_node_rank(stated, found):
    from ncclscope.rules.launch import shared_node_rank

    r = shared_node_rank(stated)
    assert (None if r is None else (r.node_rank, r.nnodes, r.machines)) == found


@pytest.mark.parametrize("line,prog", [
    ("torchrun: error: unrecognized arguments: --max_restart 0", "torchrun"),
    ("launch.py: error: the following arguments are required: training_script, training_script_args", "launch.py"),
    ("train.py: error: unrecognized arguments: --lr 3e-4", None),  # the program's own parser: not the launcher's
    ("torchrun: error: something else", None),
])
def test_a_launcher_refusing_its_command_line(line, prog):
    from ncclscope.sources.torch_log import LAUNCH_ARGS_RE

    m = LAUNCH_ARGS_RE.match(line)
    assert (m.group("prog") if m else None) == prog


@pytest.mark.parametrize("line,failed", [("# Out of bounds values : 24 FAILED", True),
                                         ("# Out of bounds values : 0 OK", False)])
def test_nccl_tests_out_of_bounds(line, failed):
    from ncclscope.sources.nccl_tests import OOB_FAILED_RE

    assert (OOB_FAILED_RE.match(line) is not None) is failed


@pytest.mark.parametrize("line,body", [
    ("trn-a: Traceback (most recent call last):", "Traceback (most recent call last):"),
    ("head-b:   File \"/x.py\", line 3, in <module>", "  File \"/x.py\", line 3, in <module>"),
    ("Error: no such file", "Error: no such file"),  # a word with no hyphen is no host
])
def test_a_pdsh_host_without_digits(line, body):
    from ncclscope.sources.lines import strip_tool_prefixes

    assert strip_tool_prefixes(line)[1] == body
