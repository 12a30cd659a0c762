"""Where each text log ends against its NCCL lines (``Parsed.end``, the ``file_end`` event): its last line,
its last NCCL line and the application's non-blank lines after that; the same whether a log is parsed alone
or grouped with other small logs, COLL rows counted as NCCL lines, and nothing added to its records."""
from __future__ import annotations

from pathlib import Path

from ncclscope import ingest
from ncclscope.model_build import build_run

INIT = ("h1:2001:2001 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
        "h1:2001:2001 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n"
        "h1:2001:2101 [0] NCCL INFO Ring 00 : 0 -> 1 -> 0\n"
        "h1:2001:2101 [0] NCCL INFO comm 0x5581a0 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n"
        "h1:2001:2001 [0] NCCL INFO Launch mode Parallel\n")
COLL = "h1:2001:2001 [0] NCCL INFO AllReduce: opCount {i:x} sendbuff 0x7f01 recvbuff 0x7f02 count 1024 datatype 7 op 0 root 0 comm 0x5581a0 [nranks=2] stream 0x55b1\n"


def _ends(folder: Path):
    parsed = ingest.ingest([folder], workers=1)
    return {p.file: p.end for p in parsed}, build_run(parsed)


def test_a_log_that_stops_after_init_has_no_text_after_its_last_nccl_line(tmp_path):
    (tmp_path / "stops.log").write_text("Loading model...\n" + INIT + "\n   \n")
    (tmp_path / "goes_on.log").write_text(INIT + "Step #0\tLoss: 2.30\nStep #1\tLoss: 2.29\n")
    ends, run = _ends(tmp_path)
    assert (ends["stops.log"].line, ends["stops.log"].last_nccl_line, ends["stops.log"].text_after) == (8, 6, 0)
    assert (ends["goes_on.log"].line, ends["goes_on.log"].last_nccl_line, ends["goes_on.log"].text_after) == (7, 5, 2)
    got = {e.evidence.file: e.data for e in run.events if e.kind == "file_end"}
    assert got == {"stops.log": {"last_line": 8, "last_nccl_line": 6, "text_after_nccl": 0},
                   "goes_on.log": {"last_line": 7, "last_nccl_line": 5, "text_after_nccl": 2}}


def test_coll_rows_count_as_nccl_lines_and_a_log_without_nccl_has_none(tmp_path):
    (tmp_path / "coll.log").write_text(INIT + "epoch 0 done\n" + "".join(COLL.format(i=i) for i in range(30)))
    (tmp_path / "app.log").write_text("Traceback (most recent call last):\n  File \"train.py\", line 3\nValueError: x\n")
    ends, run = _ends(tmp_path)
    assert (ends["coll.log"].line, ends["coll.log"].last_nccl_line, ends["coll.log"].text_after) == (36, 36, 0)
    assert ends["app.log"].last_nccl_line == 0 and ends["app.log"].text_after == 3
    by_file = {e.evidence.file: e.data for e in run.events if e.kind == "file_end"}
    assert by_file["app.log"]["last_nccl_line"] is None  # no NCCL line: not an NCCL log's end


def test_text_after_is_bounded_and_grouped_logs_get_the_ends_they_get_alone(tmp_path, monkeypatch):
    (tmp_path / "a.log").write_text(INIT + "".join(f"step {i}\n" for i in range(500)))
    (tmp_path / "b.log").write_text("".join(COLL.format(i=i) for i in range(5)) + INIT)
    (tmp_path / "c.log").write_text(INIT)
    alone = {p.file: p.end for p in ingest.ingest([tmp_path], workers=1)}
    assert alone["a.log"].text_after == ingest.TEXT_AFTER_MAX
    files = sorted((str(p), p.name, p.stat().st_size) for p in tmp_path.iterdir())
    grouped = {p.file: p.end for p in ingest.parse_job(files)}
    assert grouped == alone
    assert all(not isinstance(r, type(alone["a.log"])) for p in ingest.ingest([tmp_path], workers=1) for r in p.records)


def test_a_launcher_prefix_alone_is_no_text_after_init(tmp_path):
    """pdsh and torchrun --tee print their prefix on blank lines ('nodeg18: ', '[default0]:'): no progress
    (transformers#22363's shape: a DeepSpeed job over pdsh that hung right after init)."""
    pre = "".join(f"nodeg18: {line}\n" for line in INIT.splitlines())
    (tmp_path / "pdsh.log").write_text(pre + "nodeg18: \n[default0]:\nnodeg18: \n")
    (tmp_path / "real.log").write_text(pre + "nodeg18: epoch 0 step 1 loss 2.31\n")
    ends, _ = _ends(tmp_path)
    assert ends["pdsh.log"].text_after == 0
    assert ends["real.log"].text_after == 1


def test_a_short_line_after_a_complete_long_nccl_line_is_not_its_wrapped_tail(tmp_path):
    """An Init COMPLETE line of the width a terminal wraps at, then one short training print: two lines,
    not a wrapped one (the join would read no more NCCL than the first line alone)."""
    init = "gpu-node-1:2001:2101 [0] NCCL INFO comm 0x5581a0 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE"
    init = init + " " * (102 - len(init))
    (tmp_path / "one.log").write_text(INIT.split("h1:2001:2101 [0] NCCL INFO comm")[0] + init.rstrip() + "\n"
                                      + "epoch 0 step 10 loss 2.3012\n")
    ends, _ = _ends(tmp_path)
    assert ends["one.log"].text_after == 1


def test_an_nccl_tests_paste_whose_hash_marks_were_lost_is_read_as_nccl_tests():
    """A renderer dropped the '#' of every header line and the column head is missing: the 'nThread .. nGpus'
    line (or 'Out of bounds values') still marks nccl-tests output."""
    head = (b" nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20\n"
            b"   8388608   2097152   float   sum   -1   102.3   82.01   82.01   0   101.9   82.33   82.33   0\n")
    assert ingest.sniff(head, "paste.txt") == "nccl_tests"
    assert ingest.sniff(b" Out of bounds values : 0 OK\n", "paste.txt") == "nccl_tests"
