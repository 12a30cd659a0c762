"""Small logs parsed together give each file exactly the records it gets parsed alone."""
from __future__ import annotations

import math
from pathlib import Path

import pytest

from ncclscope.ingest import formats, groups
from ncclscope.ingest.formats import parse_file
from ncclscope.ingest.groups import GROUP_BYTES, SMALL_LOG_BYTES, group_files, parse_job
from ncclscope.sources.coll import kernel as coll_kernel
from ncclscope.sources.nccl_log import NcclCollBatch
from ncclscope.synth import generate_run


@pytest.fixture(params=["numpy", "compiled"], autouse=True)
def reader(request):
    """Every test with each COLL reader: the compiled one reads the group in the reused buffer itself."""
    if request.param == "compiled":
        assert coll_kernel.arm()
    else:
        coll_kernel.disarm()
    yield request.param
    coll_kernel.disarm()


def flat(records) -> list:
    """Records with COLL batches spread into rows (batch boundaries are not part of the result)."""
    out = []
    for r in records:
        if isinstance(r, NcclCollBatch):
            assert r.file
            out += [("row", r.file, r.procs[p], r.comms[c], r.ops[o], int(n), int(d),
                     None if math.isnan(t) else float(t), int(ln))
                    for p, c, o, n, d, t, ln in zip(r.proc, r.comm, r.op, r.count, r.datatype, r.tss, r.lines)]
        else:
            out.append(repr(r))
    return out


def both_ways(folder: Path) -> None:
    files = [(str(p), p.name, p.stat().st_size) for p in sorted(folder.iterdir()) if p.is_file()]
    together = {r.file: r for g in group_files(files) for r in parse_job(g)}
    assert set(together) == {name for _, name, _ in files}
    for path, name, _ in files:
        alone = parse_file(Path(path), name)
        got = together[name]
        assert (got.fmt, got.problem, got.size) == (alone.fmt, alone.problem, alone.size), name
        assert flat(got.records) == flat(alone.records), name


def test_generated_rank_logs(tmp_path):
    generate_run(tmp_path / "run", nranks=24, steps=30, fault="crash", seed=5)
    both_ways(tmp_path / "run")


def test_many_groups_through_one_reused_buffer(tmp_path, monkeypatch):
    # groups of about 30 KB, parsed one after the other into the same buffer: records of earlier groups
    # must not change when later ones overwrite it (both_ways compares after all groups are parsed)
    monkeypatch.setattr(groups, "GROUP_BYTES", 30_000)
    generate_run(tmp_path / "run", nranks=32, steps=12, fault="hang", seed=2)
    files = [(str(p), p.name, p.stat().st_size) for p in (tmp_path / "run").iterdir() if p.is_file()]
    assert len(group_files(files)) > 5
    both_ways(tmp_path / "run")


def test_odd_files_in_a_group(tmp_path, corpus):
    d = tmp_path / "odd"
    d.mkdir()
    coll = ("h1:7:7 [0] NCCL INFO AllReduce: opCount {i:x} sendbuff 0x1 recvbuff 0x2 count {i} datatype 7 op 0 "
            "root 0 comm 0xabc [nranks=2] stream 0x3\n")
    (d / "a.log").write_text("".join(coll.format(i=i) for i in range(500)))
    (d / "b.log").write_text("".join(coll.format(i=i) for i in range(300)).rstrip("\n"))  # no last newline
    (d / "c.log").write_text(coll.format(i=1) + "x" * 70_000 + "\n" + coll.format(i=2))  # a line cut at 64 KB
    (d / "d.log").write_text("")
    (d / "e.log").write_text("[rank0]: Traceback (most recent call last):\n" + coll.format(i=9))
    (d / "f.json").write_text('{"entries": []}')
    (d / "g.bin").write_bytes(bytes(range(256)) * 10)
    src = next(p for p in sorted(corpus.rglob("*.log")) if p.stat().st_size < SMALL_LOG_BYTES)
    (d / "h.log").write_bytes(src.read_bytes())
    both_ways(d)


def test_groups_pack_small_files_and_keep_big_ones_alone():
    files = [(f"f{i}", f"f{i}", 600_000) for i in range(20)] + [("big", "big", SMALL_LOG_BYTES + 1)]
    made = group_files(files)
    assert made[0] == [("big", "big", SMALL_LOG_BYTES + 1)]
    assert sum(len(g) for g in made) == 21
    assert all(sum(f[2] for f in g) <= GROUP_BYTES for g in made[1:])


def test_records_of_every_kind_survive_the_trip_from_a_worker(corpus):
    """Workers pickle records to the parent (``Rec.__reduce__``): every field comes back."""
    import pickle

    seen = set()
    for p in sorted(corpus.rglob("*")):
        if p.is_file():
            recs = parse_file(p, p.name).records
            back = pickle.loads(pickle.dumps(recs, protocol=pickle.HIGHEST_PROTOCOL))
            assert [repr(r) for r in back] == [repr(r) for r in recs]
            assert flat(back) == flat(recs)
            seen |= {type(r).__name__ for r in recs}
    assert len(seen) >= 12, seen


def _env_test(head: bytes) -> bool:
    """sniff's environment-file test on the whole decoded head, as it ran before the first-line probe."""
    text = head.decode("utf-8", "replace")
    start = text[:8192]
    lines = [ln for ln in (start if start.count("\n") > 50 else text).splitlines()[:50] if ln.strip()]
    return bool(lines) and all(formats._env_line(ln) for ln in lines[:20])


@pytest.mark.parametrize("seed", range(4))
def test_first_line_probe_never_skips_an_environment_file(seed):
    """Where the probe of a head's first 1 KB says its first non-blank line is no NAME=value line, the test on
    the whole head says no environment file either: line breaks of every kind, blank runs, cut UTF-8."""
    import random

    rng = random.Random(seed)
    pieces = ["A=1", "NCCL_DEBUG=INFO", "", "  ", "x y=2", "K_1=v", "=", "\u00e9", "# c", "a=b=c", "\x00",
              "[2026-12-01 10:00:00] h:1:1 [0] NCCL INFO x"]
    ends = ["\n", "\r\n", "\r", "\u2028", "\x85", "\x0b", ""]
    probed = 0
    for _ in range(3000):
        head = "".join(rng.choice(pieces) + rng.choice(ends) for _ in range(rng.randrange(1, 30))).encode()
        head = b"\n" * rng.choice([0, 0, 3, 1020, 1030]) + head
        head = head[:rng.randrange(len(head) + 1)] if rng.random() < 0.3 else head
        if formats._first_line_not_env(head):
            probed += 1
            assert not _env_test(head), head[:120]
    assert probed > 500  # the probe decides most heads


def test_walk_lists_files_in_os_walk_order_and_says_what_it_skips(tmp_path):
    """The scandir walk: a folder's files by name, then its sub-folders by name; hidden and skipped names left
    out; links and FIFOs told with why; the display name relative to the root."""
    import os

    from ncclscope.ingest.files import collect_files

    (tmp_path / "b" / "c").mkdir(parents=True)
    (tmp_path / "a").mkdir()
    for rel in ("z.log", "b/y.log", "b/c/x.log", "a/w.log", ".hidden.log"):
        (tmp_path / rel).write_text("NCCL INFO x\n")
    (tmp_path / "link.log").symlink_to(tmp_path / "z.log")
    (tmp_path / "linkdir").symlink_to(tmp_path / "a")
    os.mkfifo(tmp_path / "pipe.log")
    skipped: list[tuple[str, str]] = []
    got = collect_files([tmp_path], tmp_path, skipped)
    assert [name for _, name in got] == ["z.log", "a/w.log", "b/y.log", "b/c/x.log"]
    assert all(p == tmp_path / name for p, name in got)
    assert sorted(skipped) == [("link.log", "a symbolic link, not followed"),
                               ("linkdir", "a link to a folder, not followed"),
                               ("pipe.log", "a FIFO, not a regular file")]


def test_small_log_read_stops_at_the_listed_size_and_refuses_a_fifo(tmp_path):
    """A log read into the group's buffer: no more than its size at listing time; a FIFO is not opened
    (0 bytes: parse_file then says why)."""
    import os

    log = tmp_path / "r.log"
    log.write_bytes(b"0123456789")
    buf = memoryview(bytearray(16))
    assert groups._read_into(log, buf[:4]) == 4 and bytes(buf[:4]) == b"0123"
    assert groups._read_into(log, buf) == 10
    os.mkfifo(tmp_path / "p.log")
    assert groups._read_into(tmp_path / "p.log", buf) == 0
    assert groups._read_into(tmp_path / "missing.log", buf) == 0
