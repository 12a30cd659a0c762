"""Round sixteen's cases (tests/data/classes16/), written from the held-out sets' remaining misreadings: an
all-to-all on which every rank's watchdog timed out, the ranks' totals taking two values, one held by most of them
and the other empty, is one call made two ways (a desync naming the empty ranks), where totals that each rank has its own of (a
mixture-of-experts' routing) stay a hang; a timeout line that names no group takes the group of the rank's status
line at that number. A launcher that gave up waiting for a server to come up (``/health not ready after 900s``), with no
progress from the server after it, is a stalled start-up (a hang), where a wait that a later ready line ended is a
slow start. NCCL's clean-up WARNs (``commReclaim ... failed in destroy/abort``) alone say the job reached its end:
healthy, possible; the same WARNs after a failure are that failure's abort. ENOSPC raised while Python or PyTorch makes
a shared-memory object (a DataLoader's semaphore) is a full /dev/shm, a container's setting; raised by a checkpoint's
write it is a full disk, the rank's crash."""
from __future__ import annotations

import pytest
from class_cases import CaseSet
from wild_cases import DATA

SET = CaseSet(DATA / "classes16")
MINE = SET.names()


@pytest.mark.parametrize("name", MINE)
def test_class_case(name):
    SET.check(name)


@pytest.mark.parametrize("sizes,sided", [
    ((8, 8, 8, 0), True),  # one rank with nothing to send or receive: a desync
    ((8, 8, 0, 0, 8, 8), True),  # two empty ranks against four
    ((8, 8, 8, 4), False),  # an uneven last shard, which an all-to-all allows
    ((8, 8, 4, 4), False),  # two against two: no majority, uneven splits maybe
    ((7, 9, 8, 6), False),  # a total each: routing
    ((8, 4), False),  # two ranks: nothing to weigh
])
def test_all_to_all_sizes(sizes, sided):
    from ncclscope.rules.desync import TimedOut, watchdog_mismatch

    hit = watchdog_mismatch(TimedOut(r, "3", 9, "alltoall_base", n) for r, n in enumerate(sizes))
    assert (hit is not None) is sided
    if hit:
        assert hit[:2] == ("3", 9) and len(hit[2]) == 2


@pytest.mark.parametrize("line,what,seconds", [
    ("[launch] /health not ready after 900s, stopping project", "not_ready", 900.0),
    ("ERROR: server did not become ready within 1200 s", "not_ready", 1200.0),
    ("Timed out waiting for server to start", "not_ready", None),
    ("waiting for server (60 s)", None, None),  # a wait that goes on says nothing yet
    ("the model is not ready for export in 3 s", None, None),  # no server, health check or endpoint named
])
def test_a_launcher_gave_up_on_the_server(line, what, seconds):
    from ncclscope.sources.framework_lines import framework_line
    from ncclscope.sources.records import FrameworkStall

    recs = [r for r in framework_line("f", 1, line, line, None) if isinstance(r, FrameworkStall)]
    assert [(r.what, r.seconds) for r in recs] == ([(what, seconds)] if what else [])


@pytest.mark.parametrize("cleanup,others,failed,exit_code,covered", [
    (2, 0, False, None, True),
    (2, 1, False, None, False),  # another WARN: not the clean-up alone
    (2, 0, True, None, False),  # a failure before it: the abort's clean-up
    (2, 0, False, 1, False),
    (0, 0, False, None, False),
])
def test_the_clean_up_alone_is_the_end(cleanup, others, failed, exit_code, covered):
    from ncclscope.rules.healthy import teardown_reached

    assert (teardown_reached(cleanup, others, failed, False, exit_code) is not None) is covered


@pytest.mark.parametrize("message,frames,full", [
    ("OSError: [Errno 28] No space left on device",
     ["/usr/lib/python3.10/multiprocessing/queues.py:43 in __init__",
      "/usr/lib/python3.10/multiprocessing/synchronize.py:57 in __init__"], True),
    ("OSError: [Errno 28] No space left on device",
     ["/usr/lib/python3.10/site-packages/torch/serialization.py:1114 in _save"], False),
    ("OSError: [Errno 12] Cannot allocate memory",
     ["/usr/lib/python3.10/multiprocessing/synchronize.py:57 in __init__"], False),
])
def test_a_full_dev_shm(message, frames, full):
    from ncclscope.rules.shm_full import shm_full

    assert shm_full(message, frames) is full
