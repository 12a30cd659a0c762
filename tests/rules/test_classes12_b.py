"""Round twelve's cases (tests/data/classes12/c12b_*): facts from DeepSpeed's pdsh runner. NCCL's bare version line
(a printf with no NCCL head, ``NCCL version 2.19.3+cuda12.2``) behind pdsh's ``<host>: `` where the host name holds
no digit, which the prefix grammar does not peel: the NCCL and CUDA releases are read from it all the same. The same
nccl-tests table far slower under a newer NCCL release than under an older one earlier in the input: degraded, no
culprit."""
from __future__ import annotations

import pytest
from class_cases import CaseSet
from wild_cases import DATA

SET = CaseSet(DATA / "classes12")
MINE = SET.names("c12b_")


@pytest.mark.parametrize("name", MINE)
def test_class_case(name):
    SET.check(name)


@pytest.mark.parametrize("line,version", [
    ("gx-a: NCCL version 2.24.3+cuda12.4", ("2.24.3", "12.4")),
    ("north: NCCL version 2.19.3+cuda12.2", ("2.19.3", "12.2")),
    ("gpu003: NCCL version 2.18.5+cuda11.8", ("2.18.5", "11.8")),
    ("NCCL version 2.21.5+cuda12.4", ("2.21.5", "12.4")),
    ("RuntimeError: NCCL version 2.21.5", None),
    ("see the note: nccl NCCL version 2.21.5", None),
    ("error: NCCL version 2.21.5", None),
])
def test_the_bare_version_line_behind_a_host_name(line, version):
    from ncclscope.sources.nccl_log import parse_nccl_line
    from ncclscope.sources.records import NcclVersion

    rec = parse_nccl_line(line)
    got = (rec.version, rec.cuda) if isinstance(rec, NcclVersion) else None
    assert got == version



def _table(version, busbw):
    from ncclscope.detectors.slow_compare import Table

    rows = tuple({"file": "t.txt", "line": i, "test": "all_gather_perf", "nranks": 4, "size": 64 << 20 << i,
                  "busbw": busbw} | ({"version": version} if version else {}) for i in range(3))
    return Table("all_gather_perf", 4, rows)


@pytest.mark.parametrize("earlier,judged,later_bw,slow", [
    ("2.19.3", "2.21.5", 8.0, True),  # the newer release far slower
    ("2.19.3", "2.21.5", 18.0, False),  # as fast within noise
    ("2.21.5", "2.19.3", 8.0, False),  # the older release slower: not a release's regression
    ("2.21.5", "2.21.5", 8.0, False),  # one release: no release to blame
    (None, "2.21.5", 8.0, False),  # the earlier run's release not known
])
def test_a_newer_release_far_slower_than_an_older_one(earlier, judged, later_bw, slow):
    from ncclscope.detectors.slow_compare import slower_release

    assert (slower_release([_table(earlier, 19.7), _table(None, later_bw)], judged) is not None) is slow
