"""`ncclscope perf`: an all_reduce_perf-style sweep through torch.distributed.

Outside a launcher the command re-launches itself under
``python -m torch.distributed.run --standalone --nproc_per_node=N -m ncclscope perf ...``; inside one
(RANK and WORLD_SIZE set) every rank runs ``run_rank``: it joins the process group, runs the sweep
(``sweep.py``), and rank 0 prints the table (nccl-tests layout, ``table.py``) as it goes and saves
``perf.txt`` and ``perf.json`` in the run folder.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from .bw import OPS, busbw_factor, parse_ops, parse_size, sizes
from .table import Sweep, SweepParams, format_sweep

__all__ = ["OPS", "PerfOptions", "busbw_factor", "default_out_dir", "launch", "parse_ops", "parse_size",
           "run_rank", "sizes", "torchrun_command"]

TEXT_NAME = "perf.txt"
JSON_NAME = "perf.json"


@dataclass(frozen=True, slots=True)
class PerfOptions:
    backend: str
    ops: tuple[str, ...]
    min_bytes: int
    max_bytes: int
    factor: float
    iters: int
    warmup: int
    check: bool
    out: Path

    def params(self) -> SweepParams:
        return SweepParams(self.backend, self.min_bytes, self.max_bytes, self.factor, self.iters, self.warmup,
                           self.check)

    def cli_args(self) -> list[str]:
        """Arguments that make a rank run exactly this sweep."""
        return ["--backend", self.backend, "--ops", ",".join(self.ops), "--min-bytes", str(self.min_bytes),
                "--max-bytes", str(self.max_bytes), "--factor", f"{self.factor:g}", "--iters", str(self.iters),
                "--warmup", str(self.warmup), "--out", str(self.out)] + ([] if self.check else ["--no-check"])


def default_out_dir(now: float | None = None) -> Path:
    return Path("ncclscope-runs") / time.strftime("perf-%Y%m%d-%H%M%S", time.localtime(now))


def in_launcher(env: Mapping[str, str]) -> bool:
    return "RANK" in env and "WORLD_SIZE" in env


def torchrun_command(opts: PerfOptions, nproc: int, python: str = sys.executable) -> list[str]:
    return [python, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
            "-m", "ncclscope", "perf", *opts.cli_args()]


def launch(opts: PerfOptions, nproc: int, echo: Callable[[str], None], env: Mapping[str, str] | None = None,
           timeout_s: float | None = None) -> int:
    """Run the sweep under torchrun; relay rank 0's table line by line. Returns torchrun's exit code."""
    child_env = dict(os.environ if env is None else env)
    child_env.setdefault("OMP_NUM_THREADS", "1")  # torchrun sets it anyway, with a warning
    child_env["PYTHONUNBUFFERED"] = "1"
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT",
              "TORCHELASTIC_RUN_ID"):
        child_env.pop(k, None)
    # the child must import this very package, wherever it is installed or checked out
    root = str(Path(__file__).resolve().parent.parent.parent)
    child_env["PYTHONPATH"] = root + (os.pathsep + child_env["PYTHONPATH"] if child_env.get("PYTHONPATH") else "")
    proc = subprocess.Popen(torchrun_command(opts, nproc), stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            env=child_env, text=True, errors="replace", start_new_session=True)
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            echo(line.rstrip("\n"))
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"perf sweep ran past {timeout_s:g} s")
        return proc.wait()
    finally:
        _stop(proc)


def _stop(proc: subprocess.Popen[str]) -> None:
    """Signal the whole process group (torchrun and its ranks), wait, then kill."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()


def run_rank(opts: PerfOptions, echo: Callable[[str], None], env: Mapping[str, str] | None = None) -> Sweep | None:
    """One rank of the sweep (RANK/WORLD_SIZE/MASTER_* set by the launcher). Rank 0 returns the sweep."""
    import torch
    import torch.distributed as dist

    env = os.environ if env is None else env
    backend = opts.backend
    if backend == "nccl":
        if not torch.cuda.is_available():
            raise RuntimeError("--backend nccl needs CUDA, and this torch sees no GPU (use --backend gloo)")
        torch.cuda.set_device(int(env.get("LOCAL_RANK", "0")))
    created = not dist.is_initialized()
    if created:
        dist.init_process_group(backend)
    try:
        versions = _versions(torch, backend)
        from .sweep import run_sweep

        sweep = run_sweep(list(opts.ops), opts.params(), versions, emit=echo)
        if sweep is not None:
            from .advice import sweep_advice

            sweep.link = _link_class(sweep, backend, env)
            sweep.advice = sweep_advice(sweep.results, sweep.link, env)
            for a in sweep.advice:
                echo(f"# advice: {a}")
            save(sweep, opts.out)
            echo(f"# saved: {opts.out / TEXT_NAME} and {opts.out / JSON_NAME}")
        dist.barrier()
        return sweep
    finally:
        if created:
            dist.destroy_process_group()


def save(sweep: Sweep, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / TEXT_NAME).write_text(format_sweep(sweep))
    (out / JSON_NAME).write_text(json.dumps(sweep.to_json(), indent=1) + "\n")


def _versions(torch: object, backend: str) -> dict[str, str | None]:
    import torch as t

    nccl = None
    if backend == "nccl":
        try:
            v = t.cuda.nccl.version()
            nccl = ".".join(map(str, v)) if isinstance(v, tuple) else str(v)
        except Exception:  # noqa: BLE001 - cosmetic
            nccl = None
    return {"torch": t.__version__, "cuda": t.version.cuda, "nccl": nccl}


def _link_class(sweep: Sweep, backend: str, env: Mapping[str, str]) -> str | None:
    """What the sweep ran over: gloo; network (several hosts); NVLink or PCIe from nvidia-smi topo -m."""
    if backend == "gloo":
        return "gloo"
    hosts = {r.host for r in sweep.ranks}
    if len(hosts) > 1:
        ib = os.path.isdir("/sys/class/infiniband") and os.listdir("/sys/class/infiniband")
        return "network" if ib and env.get("NCCL_IB_DISABLE", "").strip() != "1" else "socket"
    from ..sources.nvidia_smi import parse_topo_matrix
    from .advice import link_from_topology

    try:
        text = subprocess.run(["nvidia-smi", "topo", "-m"], capture_output=True, text=True, timeout=10,
                              stdin=subprocess.DEVNULL, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    topo = parse_topo_matrix(text)
    if topo is None:
        return None
    used = {f"GPU{r.device}" for r in sweep.ranks} if "CUDA_VISIBLE_DEVICES" not in env else set(topo.gpus)
    cells = [c for (a, b), c in topo.gpu_pairs().items() if a in used and b in used]
    if not cells:
        return None
    from ..sources.nvidia_smi import LINK_CLASSES, link_class

    return link_from_topology(max((link_class(c) for c in cells), key=LINK_CLASSES.index))


def nproc_default(backend: str) -> int:
    if backend == "nccl":
        import torch

        return max(torch.cuda.device_count(), 1)
    return 2


def resolve_options(backend: str | None, ops: str, min_bytes: str, max_bytes: str, factor: float, iters: int,
                    warmup: int, check: bool, out: str | None) -> PerfOptions:
    if backend is None:
        import torch
        import torch.distributed as dist

        backend = "nccl" if torch.cuda.is_available() and dist.is_nccl_available() else "gloo"
    return PerfOptions(backend, tuple(parse_ops(ops)), parse_size(min_bytes), parse_size(max_bytes), factor,
                       iters, warmup, check, Path(out) if out else default_out_dir())


def check_options(opts: PerfOptions) -> None:
    sizes(opts.min_bytes, opts.max_bytes, opts.factor)  # raises ValueError on a bad range
    if opts.iters < 1 or opts.warmup < 0:
        raise ValueError("--iters must be >= 1 and --warmup >= 0")
