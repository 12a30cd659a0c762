"""Log shapes users paste (tests/data/wild/ holds the cited ones): what sniffing, the rank prefixes and the
nccl-tests header give. Each input is written here in the real shape, own hosts, pids and numbers."""
from __future__ import annotations

from pathlib import Path

from ncclscope.analysis import analyze_paths


def _ranks(a) -> list[int]:
    return sorted({p.rank for p in a.run.job.processes if p.rank is not None})


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_rank_tag_on_watchdog_and_traceback_lines_is_a_rank_seen(tmp_path):
    # torch 2.4's "[rankN]:" tag on heartbeat lines and a traceback, no NCCL line at all
    log = _write(tmp_path, "train.log", "".join(
        f"[rank{r}]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank {r}] Heartbeat monitor timed out! Process will be "
        f"terminated after dumping debug info. workMetaList_.size()=41\n" for r in (2, 0, 1)) +
        "[rank3]: Traceback (most recent call last):\n"
        "[rank3]:   File \"/srv/job/train.py\", line 88, in <module>\n"
        "[rank3]:     loss.backward()\n"
        "[rank3]: RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)\n")
    assert _ranks(analyze_paths([log], cache=False)) == [0, 1, 2, 3]


def test_rank_in_a_subgroup_is_not_taken_for_a_global_rank(tmp_path):
    # "[PG 3 Rank 1]" with no launcher tag: rank 1 of group 3, no global rank
    log = _write(tmp_path, "train.log",
                 "[E ProcessGroupNCCL.cpp:1316] [PG 3 Rank 1] Heartbeat monitor timed out! Process will be "
                 "terminated after dumping debug info. workMetaList_.size()=7\n")
    assert _ranks(analyze_paths([log], cache=False)) == []


def test_log_whose_first_line_is_a_python_dict_is_read_as_a_log(tmp_path):
    # HF Trainer prints its metrics as a Python dict; a tqdm bar is glued before torch's watchdog line
    log = _write(tmp_path, "train.log",
                 "{'loss': 0.2214, 'grad_norm': 0.913, 'learning_rate': 1.2e-05, 'epoch': 2.4}\n"
                 "{'loss': 0.2187, 'grad_norm': 0.874, 'learning_rate': 1.1e-05, 'epoch': 2.41}\n"
                 " 61%|######    | 410/672 [3:02:11<1:58:40, 27.18s/it][rank2]:[E ProcessGroupNCCL.cpp:1182] [Rank 2] "
                 "NCCL watchdog thread terminated with exception: CUDA error: an illegal memory access was "
                 "encountered\n")
    a = analyze_paths([log], cache=False)
    assert dict(a.run.files)["train.log"] == "log"
    assert _ranks(a) == [2]
    assert a.decision.verdict.value == "crash" and a.decision.culprit_ranks == (2,)


def test_json_files_are_still_json(tmp_path):
    from ncclscope.ingest import sniff
    assert sniff(b'{"loss": 0.1}\n{"loss": 0.2}\n', "m.jsonl") == "jsonl"
    assert sniff(b'{\n  "entries": []\n}\n', "fr.json") == "json"
    assert sniff(b"{'loss': 0.1}\n[rank0]:[W912 08:05:51.6 ProcessGroupNCCL.cpp:1479] Warning\n", "t.log") == "log"


_SWEEP = """# nThread 1 nGpus 1 minBytes 8 maxBytes 1048576 step: 2(factor) warmup iters: 5 iters: 20 validation: 1
#
# Using devices
#   Rank  0 Pid  51200 on   gpu-n07 device  0 [0x1b] NVIDIA A100-SXM4-80GB
#   Rank  1 Pid  51201 on   gpu-n07 device  1 [0x1c] NVIDIA A100-SXM4-80GB
#   Rank  2 Pid  40118 on   gpu-n08 device  0 [0x1b] NVIDIA A100-SXM4-80GB
#
#                                                     out-of-place                       in-place
#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
           8             2   float     sum    21.30    0.00    0.00  0e+00    20.91    0.00    0.00  0e+00
     1048576        262144   float     sum    88.41   11.86   15.81  0e+00    87.90   11.93   15.91  0e+00
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 5.2855
#
"""


def test_nccl_tests_output_with_no_nccl_lines_is_read(tmp_path):
    # an all_reduce_perf of before the root column (and before "Group"), NCCL_DEBUG unset, that ran to its end
    a = analyze_paths([_write(tmp_path, "sweep.txt", _SWEEP)], cache=False)
    job = a.run.job
    assert (job.world_size, job.hosts, _ranks(a)) == (3, ("gpu-n07", "gpu-n08"), [0, 1, 2])
    assert len(a.run.nccl_tests) == 4
    assert a.decision.verdict.value == "healthy"


def test_nccl_tests_header_then_a_failure_is_not_healthy(tmp_path):
    # the 2.13+ header with "Group", then the test's failure pair and nothing else
    text = ("# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 "
            "agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n"
            "#  Rank  0 Group  0 Pid 700311 on    lab-c4 device  0 [0x3b] NVIDIA L40S\n"
            "#  Rank  1 Group  0 Pid 533020 on    lab-c5 device  0 [0x3b] NVIDIA L40S\n"
            "lab-c4: Test NCCL failure common.cu:1012 'internal error - please report this issue to the NCCL "
            "developers / '\n .. lab-c4 pid 700311: Test failure common.cu:891\n")
    a = analyze_paths([_write(tmp_path, "run.txt", text)], cache=False)
    assert (a.run.job.world_size, len(a.run.job.hosts)) == (2, 2)
    assert (a.decision.verdict.value, a.decision.culprit_ranks) == ("crash", ())


def test_nccl_tests_cuda_failure_is_a_crash(tmp_path):
    text = _SWEEP.split("# Out of bounds")[0].replace(
        "     1048576        262144   float     sum    88.41   11.86   15.81  0e+00    87.90   11.93   15.91  0e+00\n",
        "gpu-n07: Test CUDA failure common.cu:1037 'an illegal memory access was encountered'\n"
        " .. gpu-n07 pid 51200: Test failure common.cu:891\n")
    a = analyze_paths([_write(tmp_path, "sweep.txt", text)], cache=False)
    assert a.decision.verdict.value == "crash"


def test_ras_report_pasted_before_the_ranks_lines_is_read_as_both(tmp_path):
    # ncclras' text report (2.26), then one rank's torch 2.6 watchdog lines
    text = ("NCCL version 2.26.5 compiled with CUDA 12.8\nCUDA runtime version 12080, driver version 12080\n\n"
            "Job summary\n===========\n\n  Nodes  Processes         GPUs  Processes     GPUs\n"
            "(total)   per node  per process    (total)  (total)\n      2          4            1          8        8\n\n"
            "Communicators... (0.02s)\n=============\n\n"
            "Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors\n"
            "    #  in group  per comm  per node  per comm  in group\n"
            "    0         1         2         4         8         8   RUNNING      OK\n\n"
            "Errors\n======\n\nWarnings\n========\n\n"
            "[rank6]:[E302 10:41:09.311270512 ProcessGroupNCCL.cpp:632] [Rank 6] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=5120, OpType=ALLREDUCE, NumelIn=2048, NumelOut=2048, "
            "Timeout(ms)=600000) ran for 600042 milliseconds before timing out.\n"
            "[rank6]:[E302 10:41:09.311502090 ProcessGroupNCCL.cpp:2268] [PG ID 0 PG GUID 0(default_pg) Rank 6]  "
            "failure detected by watchdog at work sequence id: 5120 PG status: last enqueued work: 5131, "
            "last completed work: 5119\n")
    a = analyze_paths([_write(tmp_path, "job.log", text)], cache=False)
    assert _ranks(a) == [6]
    assert a.decision.verdict.value == "hang" and a.decision.stuck is not None and a.decision.stuck.seq == 5120
    assert dict(a.run.files)["job.log"] == "ras"  # still read as the report, and its log lines too
    assert (a.run.job.world_size, a.run.job.nnodes) == (8, 2)  # the report's Job summary


def test_ranks_tagged_on_warning_lines_are_ranks_seen(tmp_path):
    # a finished run: the HF metrics dict first, then torch 2.7's destroy_process_group warning on each rank
    text = ("{'train_runtime': 912.4, 'train_loss': 0.5512, 'epoch': 1.0}\n"
            "100%|##########| 500/500 [15:12<00:00,  1.82s/it]\n" + "".join(
                f"[rank{r}]:[W302 11:02:4{r}.120331204 ProcessGroupNCCL.cpp:1479] Warning: WARNING: "
                "destroy_process_group() was not called before program exit, which can leak resources. "
                "(function operator())\n" for r in (1, 0)))
    a = analyze_paths([_write(tmp_path, "train.log", text)], cache=False)
    assert _ranks(a) == [0, 1]
    assert a.decision.verdict.value not in ("hang", "crash", "desync")


_INIT = (
    "trn-c07:20411:20411 [0] NCCL INFO NCCL version 2.27.5+cuda12.9\n"
    "trn-c07:20412:20412 [1] NCCL INFO NCCL version 2.27.5+cuda12.9\n"
    "trn-c07:20411:20530 [0] NCCL INFO ncclCommInitRankConfig comm 0x5581a2b0c3d0 rank 0 nranks 2 cudaDev 0 "
    "nvmlDev 0 busId 1b000 commId 0x7c2e91d04f5a1b36 - Init START\n"
    "trn-c07:20412:20531 [1] NCCL INFO ncclCommInitRankConfig comm 0x55f0c8e1a2b0 rank 1 nranks 2 cudaDev 1 "
    "nvmlDev 1 busId 1c000 commId 0x7c2e91d04f5a1b36 - Init START\n"
    "trn-c07:20411:20530 [0] NCCL INFO Using network Socket\n"
)
_COMPLETE = (
    "trn-c07:20411:20530 [0] NCCL INFO ncclCommInitRankConfig comm 0x5581a2b0c3d0 rank 0 nranks 2 cudaDev 0 "
    "nvmlDev 0 busId 1b000 commId 0x7c2e91d04f5a1b36 localSize 2 used 1024 bytes on core 3 - Init COMPLETE\n"
)


def test_log_ending_inside_init_is_a_possible_init_hang(tmp_path):
    # rank 0 completed init, rank 1 started and printed nothing more; no exit, no error: a pasted excerpt. Both
    # ranks of the communicator are in the log, so the one still in init is named (likely)
    a = analyze_paths([_write(tmp_path, "stress.log", _INIT + _COMPLETE)], cache=False)
    d = a.decision
    assert (d.verdict.value, d.culprit_ranks, d.certainty) == ("hang", (1,), "likely")
    hang = next(f for f in a.findings if f.kind == "hang")
    assert hang.data["suspects"] == [1]


def test_completed_init_or_known_exit_is_no_init_hang(tmp_path):
    both = _COMPLETE + _COMPLETE.replace("20411:20530 [0]", "20412:20531 [1]").replace(
        "0x5581a2b0c3d0 rank 0", "0x55f0c8e1a2b0 rank 1")
    a = analyze_paths([_write(tmp_path, "ok.log", _INIT + both)], cache=False)
    # no init hang: init completed everywhere (a log that stops right after init may still be a possible hang
    # after it, rules.hang's file-end rule; that is no init stall and names no suspect)
    assert not any(f.kind == "hang" and ("initialis" in f.message and "never" in f.message or f.data.get("suspects"))
                   for f in a.findings)
    # the same stop inside init, but the wrapper's run folder: the job may still be running (not an excerpt)
    run = tmp_path / "run"
    run.mkdir()
    _write(run, "trn-c07.20411.nccl.log", _INIT)
    _write(run, "ncclscope-rank0.jsonl", '{"type": "start", "rank": 0, "t": 1.0, "world": 2}\n')
    assert analyze_paths([run], cache=False).decision.verdict.value != "hang"


def test_init_stall_rule():
    from ncclscope.rules.hang import init_stall
    assert init_stall([0, 1], [0, 1], False, False, True) is None
    st = init_stall([0, 1], [0], False, False, True)
    assert st is not None and st.suspects == (1,) and st.level == "possible"
    assert init_stall([0, 1], [0], False, True, True) is None  # the exit is known and nothing failed
    assert init_stall([0, 1], [0], False, False, False) is None  # a run folder: maybe still running
    failed = init_stall([0, 1], [0], True, True, False)
    assert failed is not None and failed.level == "likely"


def test_horovodrun_rank_tag_and_empty_pg_guid():
    from ncclscope.sources.lines import strip_tool_prefixes
    from ncclscope.sources.torch_log import parse_torch_lines
    # horovodrun tags every line "[rank]<stdout>:" (mpirun's own form is "[jobid,rank]<stdout>:")
    assert strip_tool_prefixes("[3]<stdout>:c0ffee12ab34:811:811 [3] NCCL INFO Using network Socket") == (
        3, "c0ffee12ab34:811:811 [3] NCCL INFO Using network Socket")
    assert strip_tool_prefixes("[1,5]<stderr>:hello")[0] == 5
    # torch 2.5 under mpirun: "[PG ID 0 PG GUID  Rank N]" with an empty GUID
    line = ("[E1107 02:11:09.441230551 ProcessGroupNCCL.cpp:1487] [PG ID 0 PG GUID  Rank 6] ProcessGroupNCCL's "
            "watchdog got stuck for 10 seconds without making progress in monitoring enqueued collectives.")
    recs = list(parse_torch_lines([(1, line)], "mpirun.log"))
    assert [(r.rank, r.pg) for r in recs] == [(6, "0")]


def test_horovodrun_log_gives_its_ranks_and_version(tmp_path):
    text = ("[1]<stdout>:c0ffee12ab34:812:812 [1] NCCL INFO Bootstrap : Using eth0:172.17.0.5<0>\n"
            "[0]<stdout>:c0ffee12ab34:811:811 [0] NCCL INFO Bootstrap : Using eth0:172.17.0.5<0>\n"
            "[0]<stdout>:NCCL version 2.12.12+cuda11.6\n")
    a = analyze_paths([_write(tmp_path, "out.txt", text)], cache=False)
    assert _ranks(a) == [0, 1] and a.run.job.nccl_version == "2.12.12"


def test_nccl_tests_with_several_gpus_in_one_process_sees_each_rank(tmp_path):
    # all_reduce_perf -g 3: one pid holds three ranks
    text = _SWEEP.replace("#   Rank  1 Pid  51201 on   gpu-n07", "#   Rank  1 Pid  51200 on   gpu-n07").replace(
        "#   Rank  2 Pid  40118 on   gpu-n08", "#   Rank  2 Pid  51200 on   gpu-n07")
    a = analyze_paths([_write(tmp_path, "sweep.txt", text)], cache=False)
    assert (a.run.job.world_size, a.run.job.hosts, _ranks(a)) == (3, ("gpu-n07",), [0, 1, 2])
    assert a.decision.verdict.value == "healthy"


def test_deepspeed_launcher_gives_world_and_nodes_from_one_nodes_log(tmp_path):
    # one node's log of two: DeepSpeed's launcher lines, then a rank's NCCL line
    text = ("[2025-03-02 09:14:51,022] [INFO] [launch.py:145:main] WORLD INFO DICT: {'10.4.0.21': [0, 1, 2, 3], "
            "'10.4.0.22': [0, 1, 2, 3]}\n"
            "[2025-03-02 09:14:51,022] [INFO] [launch.py:151:main] nnodes=2, num_local_procs=4, node_rank=1\n"
            "lab-n22:30112:30112 [0] NCCL INFO Bootstrap : Using eth0:10.4.0.22<0>\n")
    job = analyze_paths([_write(tmp_path, "node1.log", text)], cache=False).run.job
    assert (job.world_size, job.nnodes, job.hosts) == (8, 2, ("lab-n22",))


def test_an_apps_own_rank_logger_names_the_rank(tmp_path):
    from ncclscope.sources.lines import strip_tool_prefixes
    line = "[RANK 4] 2025-06-01 08:12:44,301 [ERROR] (trainer) step failed: NCCL error"
    assert strip_tool_prefixes(line)[0] == 4
    text = "".join(f"[RANK {r}] 2025-06-01 08:12:44,30{r} [ERROR] (trainer) step failed: RuntimeError: NCCL "
                   "communicator was aborted on rank {r}.\n" for r in (3, 1, 0, 2))
    assert _ranks(analyze_paths([_write(tmp_path, "train.log", text)], cache=False)) == [0, 1, 2, 3]
