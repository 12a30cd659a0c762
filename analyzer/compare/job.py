"""The job's facts compared: versions (NCCL, torch, CUDA), settings, and the layout (ranks, nodes, GPUs a node)."""
from __future__ import annotations

from ..model import Evidence, Job, Run, Setting
from ..nccl.envvars import relevant
from ..nccl.risky_settings import FORCED, NOTES, SETTING_WARNINGS
from .common import diff
from .model import Aspect, Difference, Side, Tier
from .score import REST_WEIGHT, setting_weight

# settings that only say where files go or how lines are stamped: a new run folder changes them every time
_BOOKKEEPING_PARTS = ("_DUMP_", "DEBUG_FILE", "TEMP_FILE", "TIMESTAMP", "_DIR", "NCCLSCOPE_")


def _version_line(job: Job, version: str | None) -> Evidence | None:
    """The first line that printed NCCL version ``version``."""
    return job.version_lines.get(version) if version else None


def _world_line(job: Job) -> Evidence | None:
    """The first of the lines that claim the world size."""
    return job.world_lines[0] if job.world_lines else None


def versions(a: Run, b: Run) -> list[Difference]:
    """NCCL, torch and CUDA versions; the NCCL version line shows NCCL's (and CUDA's, where it prints ``+cuda``)."""
    ja, jb = a.job, b.job
    out = []
    for name, va, vb in (("NCCL", ja.nccl_version, jb.nccl_version), ("torch", ja.torch_version, jb.torch_version),
                         ("CUDA", ja.cuda_version, jb.cuda_version)):
        if va == vb or va is None or vb is None:  # a version one input does not show is not a difference
            continue
        ea = _version_line(ja, ja.nccl_version) if name != "torch" else None
        eb = _version_line(jb, jb.nccl_version) if name != "torch" else None
        if name == "CUDA":
            ea = ea if ea is not None and "cuda" in ea.text.lower() else None
            eb = eb if eb is not None and "cuda" in eb.text.lower() else None
        out.append(diff(Aspect.VERSION, Tier.REST, REST_WEIGHT["version"], f"{name} version", Side(va, ea),
                        Side(vb, eb), f"{name} {va} -> {vb}"))
    return out


def _bookkeeping(name: str) -> bool:
    return any(part in name for part in _BOOKKEEPING_PARTS)


def _why(name: str) -> str:
    """What a setting does to speed, from the knowledge of costly settings; empty when none is known."""
    if name in NOTES:
        return NOTES[name][1]
    if name in FORCED:
        return FORCED[name]
    if name in SETTING_WARNINGS:
        return SETTING_WARNINGS[name][1]
    return ""


def settings(a: Run, b: Run) -> list[Difference]:
    """Every NCCL_ / TORCH_NCCL_ / TORCH_FR_ setting set differently (or set on one side only), its line on each
    side; those known to change speed (``score.setting_weight``) in their own tier, the others with the rest.
    Settings that only name where files go are left out (every run folder changes them)."""
    sa, sb = a.job.settings, b.job.settings
    out = []
    for name in sorted(set(sa) | set(sb)):
        if not relevant(name) or _bookkeeping(name):
            continue
        xa, xb = sa.get(name), sb.get(name)
        va, vb = (_value(xa), _value(xb))
        if va == vb:
            continue
        weight = setting_weight(name)
        why = _why(name)
        msg = f"{name}: {va if va is not None else 'not set'} -> {vb if vb is not None else 'not set'}"
        out.append(diff(Aspect.SETTING, Tier.SETTING if weight is not None else Tier.REST,
                        weight if weight is not None else REST_WEIGHT["setting"], name,
                        Side(va, xa.evidence if xa else None), Side(vb, xb.evidence if xb else None),
                        msg + (f" ({why})" if why else "")))
    return out


def _value(s: Setting | None) -> str | None:
    return s.value.strip().rstrip(".") if s is not None else None


def _per_node(job: Job) -> int | None:
    """GPUs a node: ranks over nodes where both are known and divide, else the most processes of one host."""
    if job.world_size and job.nnodes and job.world_size % job.nnodes == 0:
        return job.world_size // job.nnodes
    hosts = [p.host for p in job.processes if p.host]
    return max((hosts.count(h) for h in set(hosts)), default=0) or None


def _layout_text(job: Job) -> str:
    n, nodes, g = job.world_size, job.nnodes, _per_node(job)
    return (f"{n if n is not None else '?'} ranks on {nodes if nodes is not None else '?'} "
            f"node{'s' if nodes != 1 else ''}, {g if g is not None else '?'} GPU{'s' if g != 1 else ''} a node")


def layout(a: Run, b: Run) -> list[Difference]:
    """World size, nodes and GPUs a node in one line; the lines that claim the world size as evidence."""
    ja, jb = a.job, b.job
    if (ja.world_size, ja.nnodes, _per_node(ja)) == (jb.world_size, jb.nnodes, _per_node(jb)):
        return []
    ta, tb = _layout_text(ja), _layout_text(jb)
    return [diff(Aspect.LAYOUT, Tier.REST, REST_WEIGHT["layout"], "ranks and nodes", Side(ta, _world_line(ja)),
                 Side(tb, _world_line(jb)),
                 f"job layout: {ta} -> {tb}")]
