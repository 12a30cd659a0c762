"""A serving framework's custom all-reduce in a job that stalled: a note naming it.

vLLM and SGLang replace NCCL's all-reduce inside a node by their own kernel over peer buffers (the custom all-reduce),
and print as they register its CUDA-graph buffers (``custom_all_reduce.py:246] Registering 5635 cuda graph
addresses``; ``TorchWarning`` events of ``sources.torch_log``). A tensor-parallel group that then stalls mid-run with
no error of NCCL's is a shape several reports traced to that path, and turning it off is the test that tells: a note,
arguing for no verdict, only when the job stalled.
"""
from __future__ import annotations

import re

from ..model import EventKind, Finding, FindingKind, Run, Severity
from ..rules.facts import stall_time

REGISTER_RE = re.compile(r"\bRegistering \d{1,9} cuda graph addresses")  # vLLM: "custom_all_reduce.py:246] ..."


def detect(run: Run) -> list[Finding]:
    lines = [e for e in run.events if e.kind == EventKind.TORCH_WARNING and REGISTER_RE.search(e.text)]
    if not lines or not stall_time(run)[0] or any(e.kind == EventKind.NCCL_WARN for e in run.events):
        return []
    return [Finding(
        kind=FindingKind.NOTE, severity=Severity.WARNING, ranks=(),
        message="the framework's custom all-reduce was on (it registered its CUDA-graph buffers) in a job whose "
        "tensor-parallel group then stalled with no NCCL error: stalls of that shape mid-run were traced to the "
        "custom all-reduce path in vLLM / SGLang reports",
        hint="Rerun with the custom all-reduce off (vLLM: --disable-custom-all-reduce / disable_custom_all_reduce=True; "
             "SGLang: --disable-custom-all-reduce), with --enforce-eager as a second test: if the stall goes, keep it "
             "off or move to a release that fixed it.",
        evidence=(lines[0].evidence,), data={"count": len(lines)})]
