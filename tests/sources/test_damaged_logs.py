"""Damaged text and excerpts, through ingest, the model and the verdict: one damaged line never changes
the verdict, and an excerpt is described no wider than it shows."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import SAMPLES
from ncclscope.analysis import analyze_run
from ncclscope.model_build import build_run
from ncclscope.ingest import ingest

HANG = SAMPLES / "gpu_hang"


def analyze(path: Path):
    return analyze_run(build_run(ingest([path], workers=1)))


def copy_sample(tmp_path: Path, name: str = "gpu_hang") -> Path:
    dest = tmp_path / name
    shutil.copytree(SAMPLES / name, dest)
    for p in dest.rglob("*"):
        p.chmod(0o644 if p.is_file() else 0o755)
    (dest / "report.json").unlink(missing_ok=True)
    return dest


def rewrite(path: Path, fn) -> None:
    path.write_bytes(fn(path.read_bytes()))


def test_training_output_glued_in_front_of_an_init_line_keeps_the_hang(tmp_path):
    """The issue's real run: ``step 20 loss 0.00009vm:1218:1223 [0] NCCL INFO ...`` made a second process
    ``0.00009vm`` claim rank 1, and the run was refused as two jobs."""
    run = copy_sample(tmp_path)
    log = run / "vm.821.nccl.log"
    lines = log.read_text().split("\n")
    i = next(k for k, ln in enumerate(lines) if "Init START" in ln)
    lines[i] = "step 20 loss 0.00009" + lines[i][lines[i].index("vm:"):]
    log.write_text("\n".join(lines))
    a = analyze(run)
    assert a.decision.verdict.value == "hang" and list(a.decision.culprit_ranks) == [1]
    assert not [f for f in a.findings if f.kind == "input" and "more than one job" in f.message]


def test_glued_host_in_another_file_is_not_a_second_job(tmp_path):
    """The glued line can sit in another file (stdout.log holding NCCL output): the detector itself needs
    two real processes for a rank, not one host with text in front of it."""
    run = copy_sample(tmp_path)
    init = next(ln for ln in (run / "vm.821.nccl.log").read_text().splitlines() if "Init START" in ln)
    with open(run / "stdout.log", "a") as f:
        f.write("epoch 3 loss 0.00009" + init[init.index("vm:"):] + "\n")
    a = analyze(run)
    assert a.decision.verdict.value == "hang"
    assert not [f for f in a.findings if f.kind == "input" and "more than one job" in f.message]


@pytest.mark.parametrize("width", [80, 97, 120, 150, 200])
def test_hard_wrapped_logs_keep_the_verdict(tmp_path, width):
    """Every log of the run hard-wrapped at ``width`` columns, as a terminal paste does."""
    run = copy_sample(tmp_path)

    def wrap(data: bytes) -> bytes:
        out = []
        for ln in data.decode().split("\n"):
            out += [ln[i:i + width] for i in range(0, max(len(ln), 1), width)]
        return "\n".join(out).encode()

    for p in [*run.glob("*.log")]:
        rewrite(p, wrap)
    a = analyze(run)
    assert a.decision.verdict.value == "hang" and list(a.decision.culprit_ranks) == [1]


def test_nul_garbage_and_cr_only_ends_keep_the_verdict(tmp_path):
    run = copy_sample(tmp_path)
    rewrite(run / "vm.820.nccl.log", lambda d: d.replace(b"NCCL INFO comm", b"NCCL INFO comm\x00", 1)
            .replace(b"Init COMPLETE", b"Init COMPLETE\xff\xfe", 1))
    rewrite(run / "stderr.log", lambda d: d.replace(b"\n", b"\r"))
    rewrite(run / "vm.821.nccl.log", lambda d: d.replace(b"\n", b"\r"))
    a = analyze(run)
    assert a.decision.verdict.value == "hang" and list(a.decision.culprit_ranks) == [1]


def test_srun_labels_and_mpirun_tags_keep_the_verdict(tmp_path):
    run = copy_sample(tmp_path)
    rewrite(run / "vm.820.nccl.log", lambda d: b"".join(b"0: " + ln for ln in d.splitlines(True)))
    rewrite(run / "vm.821.nccl.log", lambda d: b"".join(b"[1,1]<stdout>:" + ln for ln in d.splitlines(True)))
    rewrite(run / "stderr.log", lambda d: b"".join(b"2026-11-29T20:44:45.1Z " + ln for ln in d.splitlines(True)))
    a = analyze(run)
    assert a.decision.verdict.value == "hang" and list(a.decision.culprit_ranks) == [1]


def _watchdog_excerpt(ranks: range, world_line: str | None = None) -> str:
    lines = [world_line] if world_line else []
    for r in ranks:
        lines.append(f"[rank{r}]:[E1203 09:14:{r % 60:02d}.51 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective "
                     f"operation timeout: WorkNCCL(SeqNum=812, OpType=ALLREDUCE, NumelIn=2048, NumelOut=2048, "
                     f"Timeout(ms)=600000) ran for {600000 + r} milliseconds before timing out.")
        lines.append(f"[rank{r}]:[E1203 09:14:{r % 60:02d}.52 ProcessGroupNCCL.cpp:1664] [PG ID 0 PG GUID 0(default_pg) "
                     f"Rank {r}]  failure detected by watchdog at work sequence id: 812 PG status: last enqueued work: "
                     "812, last completed work: 811")
    return "\n".join(lines) + "\n"


def test_excerpt_without_world_size_never_says_every_rank(tmp_path):
    """40 pasted lines of a 64-rank job: the 20 ranks it shows waited in #812; it cannot say the others did."""
    f = tmp_path / "pasted.txt"
    f.write_text(_watchdog_excerpt(range(20)))
    a = analyze(f)
    assert a.decision.verdict.value == "hang"
    text = " ".join(x.message for x in a.findings)
    assert "every rank joined" not in text and "ranks 0-19" in text and "world size" in text


def test_excerpt_with_a_printed_world_size_names_the_ranks_it_lacks(tmp_path):
    """The same excerpt with torchrun's rendezvous line: the world is 64, and ranks 20-63 are not in it."""
    f = tmp_path / "pasted.txt"
    f.write_text(_watchdog_excerpt(range(20), "[default] Rendezvous complete for workers. Result: restart_count=0 "
                                              "group_world_size=8 global_world_sizes=[64, 64]"))
    a = analyze(f)
    assert a.run.job.world_size == 64
    missing = [x for x in a.findings if x.kind == "input" and "no input from" in x.message]
    assert missing and "20-63" in missing[0].message
    hang = next(x for x in a.findings if x.kind == "hang")
    assert "every rank joined" not in hang.message and "ranks 0-19" in hang.message and "64" in hang.message


def test_versions_printed_by_pytorch_reach_the_model(tmp_path):
    f = tmp_path / "stderr.log"
    f.write_text("PyTorch version: 2.4.1+cu121\n"
                 "[rank1]:torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
                 "NCCLUtils.hpp:275, invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.21.5\n")
    job = analyze(f).run.job
    assert (job.torch_version, job.nccl_version) == ("2.4.1+cu121", "2.21.5")


def test_timeouts_alone_with_the_init_barrier_name_the_missing_rank(tmp_path):
    """torch 1.x glog lines without a time and no status lines at all (the shape of
    tests/data/wild/ofa271_watchdog_glog_notime): 7 of 8 ranks time out in work 281944, and the init
    barrier's ``with 8 nodes`` gives the world, so the eighth rank is the one that never came."""
    f = tmp_path / "train.log"
    f.write_text("2026-10-20 23:41:07 | INFO | torch.distributed.distributed_c10d | Rank 0: Completed store-based "
                 "barrier for key:store_based_barrier_key:1 with 8 nodes.\n" + "".join(
                     f"[E ProcessGroupNCCL.cpp:737] [Rank {r}] Watchdog caught collective operation timeout: "
                     f"WorkNCCL(SeqNum=281944, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for {1801900 + r} "
                     "milliseconds before timing out.\n" for r in (5, 2, 7, 0, 1, 6, 3)))
    a = analyze(f)
    assert a.run.job.world_size == 8
    assert a.decision.verdict.value == "hang" and list(a.decision.culprit_ranks) == [4]


def test_timeouts_never_override_a_better_status(tmp_path):
    """A watchdog timeout only stands in for a status when nothing else gives one: with the samples'
    Flight Recorder dumps and watchdog lines, the verdict and stuck collective stay as they were."""
    run = copy_sample(tmp_path)
    a = analyze(run)
    assert a.decision.verdict.value == "hang" and a.decision.stuck is not None and a.decision.stuck.seq == 125
    assert not [s for s in a.run.pg_status if s.source == "watchdog_timeout"]


@pytest.mark.parametrize("text,is_progress", [
    ("step 20 loss 0.00009vm:1218:1223 [0] NCCL INFO", True),  # glued in front of a log line
    ("{'loss': 1.5, 'epoch': 0.1}", True), ("train_loss=2.1e-3", True), ("val/loss=3", True), ("loss: nan", True),
    ("WhrgsvdI41PY+gBv4JpZhY8gtkDHF0LOSS21Cgvi8fOedFErfu", False),  # base64 with LOSS and a digit in it
    ("9f3c+LOSS21Cg/x", False), ("GLOSS2", False),
])
def test_a_loss_print_is_a_word_with_its_number_not_letters_inside_junk(text, is_progress):
    from ncclscope.sources.torch_log import PROGRESS_RE
    assert bool(PROGRESS_RE.search(text)) is is_progress
