"""``ncclscope doctor RUN_DIR``: do the ranks of a run folder agree with each other?

The same rule as the ``diag`` detector (``rules.consistency``), over what the folder holds:

- each process's NCCL lines: its NCCL release (``NCCL version 2.31.2+cuda13.0``), the CUDA version its driver
  supports (``cudaDriverVersion 13000``, compared as ``13.0``) and the settings NCCL read (``NCCL_IB_HCA set by
  environment to mlx5_0``), under the process's global rank when its Init lines give it;
- environment listings (``env.txt``, ``KEY=VALUE`` lines; the rank is the listing's own ``RANK=``, else the file):
  their ``NCCL_*`` / ``TORCH_NCCL_*`` settings, where a variable one listing lacks is ``(unset)``;
- ``nvidia-smi`` and ``nvidia-smi -L`` output saved per node: the driver, the CUDA version it supports, the GPU
  models and count;
- NCCL's own diagnostics (2.31+ ``NCCL DIAG`` lines): what it found differing, ECC errors, NVLinks down, P2P failures.

``observations`` and ``run_dir_checks`` are pure; ``check_run_dir`` reads the folder (through ``ingest``).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..diag_model import DiagResult
from ..model import Evidence, Severity
from ..rules.consistency import ADVICE, Aspect, Observation, Problem, Trouble, differing, from_diagnostics
from ..sources import records as R
from ..sources.nccl_diag import NcclCudaDriver, NcclDiag, results_of
from ..sources.nvidia_smi import parse_gpu_list, parse_smi_banner
from . import DoctorReport
from .checks import Check, Status, overall

SETTING_PREFIXES = ("NCCL_", "TORCH_NCCL_")
SMI_MAX_BYTES = 1 << 20  # an nvidia-smi output is a few KB: larger files are not one
STATUS = {Severity.CRITICAL: Status.FAIL, Severity.ERROR: Status.FAIL, Severity.WARNING: Status.WARN,
          Severity.INFO: Status.WARN}
TITLE = {Trouble.ECC_ERRORS: "ECC errors", Trouble.ECC_CORRECTED: "ECC corrected errors", Trouble.LINK_DOWN: "NVLink state",
         Trouble.LINK_SPEED: "NVLink speed", Trouble.P2P_FAILED: "GPU P2P paths", Trouble.INCOMPLETE: "diagnostics coverage",
         Trouble.DIAG_FAILED: "diagnostics run"}
ASPECT_ID = {Aspect.NCCL_SETTING: "settings", Aspect.NCCL_VERSION: "nccl_version", Aspect.CUDA_DRIVER: "cuda_driver",
             Aspect.NVIDIA_DRIVER: "nvidia_driver", Aspect.GPU_MODEL: "gpu_model", Aspect.GPU_COUNT: "gpu_count",
             Aspect.NVLINK_COUNT: "nvlink_count"}


@dataclass(frozen=True, slots=True)
class SmiOutput:
    """One saved ``nvidia-smi`` (or ``nvidia-smi -L``) output: whose it is (its file's name) and its text."""

    who: str
    file: str
    text: str


def observations(records: Iterable[R.Rec], proc_rank: Mapping[tuple[str, int], int],
                 smi: Iterable[SmiOutput] = ()) -> list[Observation]:
    """What each rank (process, listing, node) of the folder shows, one ``Observation`` per value."""
    out: list[Observation] = []
    listing_rank: dict[str, int] = {}
    listed: list[R.EnvSetting] = []
    for rec in records:
        if isinstance(rec, R.NcclVersion) and rec.pid:
            who, rank = _who(rec, proc_rank)
            out.append(Observation(Aspect.NCCL_VERSION, who, rec.version, _ev(rec), rank=rank))
        elif isinstance(rec, NcclCudaDriver) and rec.pid:
            who, rank = _who(rec, proc_rank)
            out.append(Observation(Aspect.CUDA_DRIVER, who, rec.cuda, _ev(rec), rank=rank))
        elif isinstance(rec, R.NcclEnv) and rec.pid and rec.name.startswith(SETTING_PREFIXES):
            who, rank = _who(rec, proc_rank)
            out.append(Observation(Aspect.NCCL_SETTING, who, rec.value, _ev(rec), key=rec.name, rank=rank))
        elif isinstance(rec, R.EnvSetting):
            if rec.name == "RANK" and rec.value.strip().isdigit():
                listing_rank[rec.file] = int(rec.value)
            elif rec.name.startswith(SETTING_PREFIXES):
                listed.append(rec)
    for rec in listed:  # a listing is its rank's when it says RANK=, else its file's
        rank = listing_rank.get(rec.file)
        who = f"rank {rank}" if rank is not None else rec.file
        out.append(Observation(Aspect.NCCL_SETTING, who, rec.value, _ev(rec), key=rec.name, rank=rank, listing=True))
    for s in smi:
        out.extend(smi_observations(s))
    return out


def smi_observations(s: SmiOutput) -> list[Observation]:
    """A node's driver, the CUDA version its driver supports, its GPUs' model and count."""
    out: list[Observation] = []
    lines = s.text.splitlines()
    banner = parse_smi_banner(s.text)
    for aspect, key, word in ((Aspect.NVIDIA_DRIVER, "driver", "Driver Version"), (Aspect.CUDA_DRIVER, "cuda",
                                                                                    "CUDA Version")):
        if key in banner:
            n = next((i for i, ln in enumerate(lines, 1) if word in ln), 1)
            out.append(Observation(aspect, s.who, banner[key], Evidence(s.file, n, lines[n - 1].strip())))
    gpus = parse_gpu_list(s.text)
    if gpus:
        first = next(i for i, ln in enumerate(lines, 1) if ln.strip().startswith("GPU "))
        ev = Evidence(s.file, first, lines[first - 1].strip())
        out.append(Observation(Aspect.GPU_COUNT, s.who, str(len(gpus)), ev))
        out.append(Observation(Aspect.GPU_MODEL, s.who, " + ".join(sorted({g.name for g in gpus})), ev))
    return out


def run_dir_checks(obs: list[Observation], diag: list[DiagResult]) -> list[Check]:
    """One check per aspect the folder shows (OK: every rank agrees; else one per problem), then NCCL's own
    diagnostics (OK when its reports name no problem)."""
    problems = differing(obs)
    out: list[Check] = []
    for aspect in Aspect:
        seen = [o for o in obs if o.aspect is aspect]
        if not seen:
            continue
        mine = [p for p in problems if p.aspect is aspect]
        if mine:
            out.extend(_check(p, f"run.{ASPECT_ID[aspect]}") for p in mine)
            continue
        whos = sorted({o.who for o in seen})
        values = sorted({o.value for o in seen})
        what = (f"{len({o.key for o in seen})} setting(s), the same on every one of {len(whos)}"
                if aspect is Aspect.NCCL_SETTING else f"{values[0]} on all {len(whos)}")
        out.append(Check(f"run.{ASPECT_ID[aspect]}", aspect.value, Status.OK, f"{what} ({_few(whos)})",
                         data={"who": whos}))
    found = from_diagnostics(diag)
    out.extend(_check(p, "run.nccl_diag") for p in found)
    if diag and not found:
        out.append(Check("run.nccl_diag", "NCCL's diagnostics", Status.OK,
                         f"{len(diag)} line(s) of NCCL's own diagnostics, no inconsistency named"))
    if not out:
        out.append(Check("run.consistency", "ranks agree", Status.SKIPPED,
                         "nothing to compare: no NCCL version or settings lines, environment listing, nvidia-smi "
                         "output or NCCL DIAG line in the folder"))
    return out


def _check(p: Problem, cid: str) -> Check:
    title = p.aspect.value if p.aspect is not None else TITLE.get(p.trouble, p.trouble.value)
    return Check(cid, title, STATUS[p.severity], p.message, (ADVICE[p.trouble],),
                 {"found_by": p.found_by.value, "values": [[v, list(w)] for v, w in p.groups], "ranks": list(p.ranks),
                  "evidence": [e.to_json() for e in p.evidence]})


def _few(whos: list[str]) -> str:
    return ", ".join(whos[:6]) + (f" and {len(whos) - 6} more" if len(whos) > 6 else "")


def _who(rec: R.NcclRec, proc_rank: Mapping[tuple[str, int], int]) -> tuple[str, int | None]:
    rank = proc_rank.get((rec.host, rec.pid))
    return (f"rank {rank}", rank) if rank is not None else (f"{rec.host}:{rec.pid}", None)


def _ev(rec: R.Rec) -> Evidence:
    return Evidence(rec.file, rec.line, rec.text.rstrip("\r\n"))


# --- the folder (I/O) ------------------------------------------------------------------------------------

def check_run_dir(run_dir: Path) -> DoctorReport:
    """Read ``run_dir`` (raises ``InputError`` when it holds nothing readable) and check that its ranks agree."""
    from ..ingest import ingest
    from ..model_build import build_run

    parsed = ingest([run_dir])
    records = [r for p in parsed for r in p.records]
    diag = results_of(r for r in records if isinstance(r, NcclDiag))
    smi = list(read_smi_outputs(run_dir))
    run = build_run(parsed)
    proc_rank = {(p.host, p.pid): p.rank for p in run.job.processes if p.rank is not None}
    checks = run_dir_checks(observations(records, proc_rank, smi), diag)
    advice = list(dict.fromkeys(a for c in checks if c.status in (Status.WARN, Status.FAIL) for a in c.advice))
    return DoctorReport(str(run_dir), tuple(checks), (), tuple(advice), overall(checks))


def read_smi_outputs(run_dir: Path) -> Iterable[SmiOutput]:
    """Files of the folder that hold ``nvidia-smi`` output (its banner's ``Driver Version``, or ``GPU 0: ...
    (UUID: ...)`` lines), each named by its path in the folder."""
    from .. import safe_io
    from ..ingest import collect_files

    for path, name in collect_files([run_dir], run_dir):
        try:
            with safe_io.open_regular(path) as f:
                data = f.read(SMI_MAX_BYTES + 1)
        except OSError:
            continue
        if len(data) > SMI_MAX_BYTES or (b"NVIDIA-SMI" not in data and b"(UUID: GPU-" not in data):
            continue
        text = data.decode("utf-8", "replace")
        yield SmiOutput(name.rsplit(".", 1)[0] if "." in name.rsplit("/", 1)[-1] else name, name, text)
