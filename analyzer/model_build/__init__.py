"""Records -> one ``Run``: processes mapped to global ranks, communicators joined across
processes, a per-rank collectives table, per-rank process-group status, notable events.

Pure: takes the parsed files, returns the model. One pass sorts the records (``gather``); then
each part of the model is built by its own module: ``ranks`` (processes, global ranks, world
size, the job), ``communicators`` (rings, trees, connections), ``collectives`` (the table and
process-group status; NCCL COLL rows in ``nccl_table``), ``events`` (events and exits).
"""
from __future__ import annotations

from collections.abc import Iterable

from ..gc_pause import gc_paused
from ..ingest import Parsed
from ..model import Run
from ..sources import records as R
from ..sources.nccl_diag import results_of
from .collectives import build_collectives
from .communicators import build_communicators, identities
from .events import build_events, build_exits
from .fr_job import build_fr_job
from .gather import gather
from .inspector_rows import inspector_problems
from .ranks import assign_ranks, build_job, drop_implausible
from .ras_comms import ras_communicators
from .runs import earlier_runs, split_runs
from .shown import graph_searches, tuning_choices

__all__ = ["build_run"]


def build_run(parsed: Iterable[Parsed], release: bool = False) -> Run:
    """The run's model from parsed files. ``release``: drop each COLL batch's arrays once they are in the
    collectives table (``nccl_coll_table``), for a caller that is done with ``parsed``."""
    with gc_paused():
        return _build_run(parsed, release)


def _build_run(parsed: Iterable[Parsed], release: bool) -> Run:
    parsed, earlier = split_runs(list(parsed))
    files = [(p.file, p.fmt) for p in parsed]
    problems = [p.problem for p in parsed if p.problem]
    g = gather(parsed)
    # the records live on in ``g``; emptying our copy of the list lets the COLL batches go as soon as
    # the table has them (when the caller kept no reference to the parsed files)
    parsed.clear()
    problems += drop_implausible(g)
    problems += inspector_problems(g.inspector_stats)
    ranks = assign_ranks(g)
    problems += ranks.problems
    ident = identities(g.comms, ranks.proc_rank)
    communicators = build_communicators(g.comms, ident, ranks.proc_rank)
    communicators += ras_communicators(g.ras, communicators)  # those only NCCL's RAS report names
    coll = build_collectives(g, ranks.proc_rank, ident, release)
    events = build_events(g, ranks.proc_rank, coll.pg_status) + earlier_runs(earlier)
    exits = build_exits(g, ranks.proc_rank)
    job = build_job(g, ranks, coll.nccl_torch_version)
    return Run(job=job, communicators=communicators, collectives=coll.table, pg_status=coll.pg_status,
               events=events, exits=exits, ras=[_ras_dict(r) for r in g.ras], stacks=coll.stacks, files=files,
               problems=problems, heartbeats=coll.heartbeats, nccl_tests=[_tests_dict(t) for t in g.tests],
               killed_pids={s.pid for s in g.signals}, flight_recorder=build_fr_job(g.frs),
               origins=g.origins, tuning=tuning_choices(g.tuning), graphs=graph_searches(g.graphs), diagnostics=results_of(g.diag))


def _ras_dict(r: R.RasComm) -> dict[str, object]:
    return {"comm": r.comm_hash, "errors": r.errors, "counts": r.counts, "launched": r.launched_up_to,
            "missing": r.missing_ranks, "file": r.file, "line": r.line, "text": r.text, "nranks": r.nranks,
            "status": r.status, "groups": [list(g) for g in r.groups], "dead_ranks": r.dead_ranks,
            "dead_processes": r.dead_processes}


def _tests_dict(t: R.NcclTestsRow) -> dict[str, object]:
    return {"test": t.test, "nranks": t.nranks, "size": t.size, "count": t.count, "dtype": t.dtype,
            "time_us": t.time_us, "algbw": t.algbw, "busbw": t.busbw, "in_place": t.in_place,
            "file": t.file, "line": t.line}
