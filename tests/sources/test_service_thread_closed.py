"""NCCL's ``[Service thread] Connection closed by localRank N`` INFO line: the proxy service of a process saw a local
rank's connection close (that process exiting or tearing down). It is a record (``NcclServiceClosed``) that shows the
process and its host, so a pasted log whose only lines from a node are these counts that node, and it tells that
processes were ending: a log that stops on them has not stopped inside NCCL's set-up or right after its init.
Shapes of aws/aws-k8s-tester#454 (MPI teardown) and NVIDIA/nccl-tests#252 (after an IB error)."""
from __future__ import annotations

from pathlib import Path

from ncclscope.analysis import analyze_paths
from ncclscope.sources import records as R
from ncclscope.sources.nccl_log import parse_nccl_line, parse_nccl_line_regex


def test_the_line_is_a_record_of_its_process_in_both_parsers():
    for line in ("nodeb1:28744:29402 [0] NCCL INFO [Service thread] Connection closed by localRank 2",
                 "[1,9]<stdout>:worker-1:22:585 [1] NCCL INFO [Service thread] Connection closed by localRank -1"):
        for parse in (parse_nccl_line, parse_nccl_line_regex):
            rec = parse(line, "x.log", 1)
            assert isinstance(rec, R.NcclServiceClosed), (parse.__name__, line)
            assert rec.host in ("nodeb1", "worker-1") and rec.pid in (28744, 22)
    assert parse_nccl_line("h:1:2 [0] NCCL INFO [Service thread] Connection closed by localRank x2", "x", 1) is None


def _analyze(tmp_path: Path, text: str):
    p = tmp_path / "out.log"
    p.write_text(text)
    return analyze_paths([p], cache=False)


def test_a_node_seen_only_in_teardown_lines_counts_as_a_host(tmp_path):
    text = ("nodeb2:30410:31022 [0] ib_plugin.c:1105 NCCL WARN NET/IB : Got completion from peer 10.0.41.1<51304> "
            "with error 12, opcode 0, len 0, vendor err 129 (Send)\n"
            "nodeb2:30410:31022 [0] NCCL INFO transport/net.cc:1137 -> 6\n"
            "nodeb2:30410:31020 [0] NCCL INFO [Service thread] Connection closed by localRank 0\n"
            "nodeb1:28744:29402 [0] NCCL INFO [Service thread] Connection closed by localRank 2\n")
    a = _analyze(tmp_path, text)
    assert sorted(a.run.job.hosts) == ["nodeb1", "nodeb2"]


def test_a_log_ending_on_teardown_lines_is_no_setup_hang(tmp_path):
    text = "".join(f"[1,{r}]<stdout>:Process {r} - Training time: 10.1 seconds\n" for r in range(4))
    text += "".join(f"[1,{r}]<stdout>:worker-{r // 2}:{20 + r}:{570 + r} [{r % 2}] NCCL INFO [Service thread] "
                    f"Connection closed by localRank {1 - r % 2}\n" for r in range(4))
    a = _analyze(tmp_path, text)
    assert not any(f.kind == "hang" for f in a.findings), [f.message for f in a.findings]
    assert a.decision.verdict.value != "hang"
