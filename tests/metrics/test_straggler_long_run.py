"""A straggler in a long run: thousands of late arrivals, the slow rank late in a share of them well above chance.
The binomial tail of that many events overflowed a float (``math.comb`` times a power), the detector failed and
the degraded run read healthy."""
from __future__ import annotations

import math

import pandas as pd
from ncclscope.detectors import run_detectors, straggler
from ncclscope.detectors.straggler import EXACT_UP_TO, binom_tail
from ncclscope.model import COLLECTIVE_COLUMNS, Job, Run


def _run(seqs: int, nranks: int = 4, slow: int = 2) -> Run:
    """The hook's timed records: at every even collective ``slow`` arrives 30 ms late (its kernel is the shortest),
    at the others a rotating rank is 8 ms late, as noise in a busy job."""
    rows = []
    for seq in range(2, seqs + 2):
        late, wait = (slow, 30.0) if seq % 2 == 0 else ((seq // 2) % nranks, 8.0)
        for r in range(nranks):
            rows.append({"rank": r, "pg": "0", "seq": seq, "op": "allreduce", "bytes": 1 << 20, "state": "completed",
                         "t_created": 1000.0 + seq, "duration_ms": 2.0 if r == late else 2.0 + wait,
                         "source": "hook", "file": f"rank{r}.jsonl", "line": seq})
    df = pd.DataFrame([{c: row.get(c) for c in COLLECTIVE_COLUMNS} for row in rows], columns=COLLECTIVE_COLUMNS)
    job = Job(world_size=nranks, hosts=("h1",), processes=(), nccl_version=None, torch_version=None, cuda_version=None)
    return Run(job=job, communicators=[], collectives=df, pg_status=[], events=[], exits=[])


def test_a_straggler_late_at_half_of_6000_collectives_is_found() -> None:
    run = _run(6000)
    assert not [f for f in run_detectors(run, only=["straggler"]) if f.kind == "internal"]
    (f,) = straggler.detect(run)
    assert f.ranks == (2,) and f.data["events"] == 6000 and f.data["late_count"] > 3000 and f.data["p_value"] < 1e-100


def test_noise_alone_in_a_long_run_is_no_straggler() -> None:
    run = _run(6000, slow=-1)  # nobody is late more than its share
    assert straggler.detect(run) == []


def test_the_tail_is_exact_for_few_events_and_a_bound_above_for_many() -> None:
    def exact(k: int, n: int, p: float) -> float:
        return sum(math.comb(n, i) * p ** i * (1 - p) ** (n - i) for i in range(k, n + 1))

    for k, n, p in ((3, 5, 0.5), (30, 40, 0.25), (100, 300, 0.25), (5, 5, 0.5), (0, 9, 0.5)):
        assert math.isclose(binom_tail(k, n, p), exact(k, n, p), rel_tol=1e-9)
    def exact_in_logs(k: int, n: int, p: float) -> float:
        lg = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * math.log(p)
              + (n - i) * math.log1p(-p) for i in range(k, n + 1)]
        return sum(math.exp(x) for x in lg)

    n = EXACT_UP_TO + 1
    for k in (n // 4 + 40, n // 3, n // 2):
        assert exact_in_logs(k, n, 0.25) <= binom_tail(k, n, 0.25)  # the bound is above the exact tail
    assert binom_tail(n // 3, n, 0.25) < 1e-10  # and still tells a rank late at a third of 2,001 events from chance
    assert binom_tail(n // 4, n, 0.25) == 1.0 and binom_tail(n + 1, n, 0.25) == 0.0
