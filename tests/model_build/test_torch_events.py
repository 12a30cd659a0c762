"""PyTorch records the detectors judge reach ``run.events`` under their own kinds, with their facts as data:
the lines go through the real parser and model build (``ingest`` -> ``build_run``)."""
from __future__ import annotations

from ncclscope.ingest import ingest
from ncclscope.model_build import build_run

FP = "TensorShape=[64, 7], TensorDtypes=Half, TensorDeviceTypes=TensorOptions(dtype=Half, device=cuda)"


def _events(tmp_path, text: str):
    (tmp_path / "train.log").write_text(text)
    return build_run(ingest([tmp_path])).events


def test_store_barrier_wait_and_timeout_are_events_with_world_and_arrived_count(tmp_path):
    evs = _events(tmp_path,
                  "INFO:root:Waiting in store based barrier to initialize process group for rank: 5, key: "
                  "store_based_barrier_key:1 (world_size=8, worker_count=7, timeout=0:30:00)\n"
                  "RuntimeError: Timed out initializing process group in store based barrier on rank: 3, for key: "
                  "store_based_barrier_key:1 (world_size=8, worker_count=7, timeout=0:30:00)\n")
    got = [(e.rank, e.data) for e in evs if e.kind == "store_barrier_wait"]
    assert got == [(5, {"world_size": 8, "worker_count": 7, "key": "store_based_barrier_key:1", "timed_out": False}),
                   (3, {"world_size": 8, "worker_count": 7, "key": "store_based_barrier_key:1", "timed_out": True})]


def test_exit_time_warnings_are_program_exit_events_of_their_rank(tmp_path):
    evs = _events(tmp_path,
                  "[rank3]:[W611 16:40:12.118000331 ProcessGroupNCCL.cpp:1117] WARNING: process group has NOT been "
                  "destroyed before it is being destructed. On normal program exit, the application should call "
                  "destroy_process_group to ensure that any pending NCCL data transfers have finished.\n"
                  "[rank1]:[W912 08:05:51.614092277 ProcessGroupNCCL.cpp:1479] Warning: WARNING: destroy_process_group() "
                  "was not called before program exit, which can leak resources.\n")
    assert [(e.kind, e.rank, e.data) for e in evs if e.kind == "program_exit"] == [
        ("program_exit", 3, {}), ("program_exit", 1, {})]
    assert not [e for e in evs if e.kind == "ProgramExit"]  # the record's class name is not the kind


def test_detail_mismatch_event_carries_each_fingerprints_sequence_number(tmp_path):
    evs = _events(tmp_path,
                  "[rank5]: RuntimeError: Detected mismatch between collectives on ranks. Rank 1 is running "
                  f"collective: CollectiveFingerPrint(SequenceNumber=20, OpType=BROADCAST, {FP}, but Rank 2 is "
                  "running collective: CollectiveFingerPrint(SequenceNumber=9OpType=BARRIER).\n")
    (e,) = [e for e in evs if e.kind == "collective_mismatch"]
    assert e.data["ranks"] == [1, 2] and e.data["seqs"] == [20, 9] and e.data["seq"] == 20
    assert len(e.data["fingerprints"]) == 2
