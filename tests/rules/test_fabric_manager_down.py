"""A node whose NVSwitch fabric manager is down (CUDA error 802, 'system not yet initialized') is a setup fault: a
config error with no rank to blame, also where each rank prints only its exception's last line under the launcher's
tag (no traceback): the knowledge base knows the message."""
from __future__ import annotations

from class2_cases import check
from ncclscope.model import Verdict
from ncclscope.sources.records import DistError
from ncclscope.sources.torch_log import parse_torch_lines


def test_fabric_manager_down_on_every_rank_is_a_config_error():
    a = check("fabric_manager_down_rank_lines")
    assert a.decision.verdict is Verdict.CONFIG_ERROR and a.decision.culprit_ranks == ()


def test_a_tagged_exception_line_the_knowledge_base_knows_is_the_rank_s_error():
    lines = [(1, "[rank3]: RuntimeError: CUDA error: system not yet initialized"),
             (2, "[rank4]: ValueError: could not parse the config"),  # unknown, no traceback: not an error of the job
             (3, "RuntimeError: CUDA error: system not yet initialized")]  # no rank tag: left to the traceback reader
    errs = [r for r in parse_torch_lines(lines, "t.log") if isinstance(r, DistError)]
    assert [(e.rank, e.exc_type) for e in errs] == [(3, "RuntimeError")]
