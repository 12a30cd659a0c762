"""The environment a launch command sets for the job, as its console shows the command: the shell's assignments in
front of the launcher (``NCCL_SHM_DISABLE=1 CUDA_LAUNCH_BLOCKING=1 torchrun ...``, ``env NCCL_P2P_DISABLE=1 srun
...``) and mpirun's exported values (``mpirun -x NCCL_IB_HCA=mlx5_0 ...``). Each is an ``EnvSetting`` the job ran
with, read like a line of an environment listing. Only the NCCL / torch / CUDA / gloo variables, only a value written
out (``-x NAME`` alone passes the caller's value, which the line does not show), and only on the line of the command
itself: a variable a program's advice quotes is not the job's."""
from __future__ import annotations

import re
from collections.abc import Iterator

from .records import EnvSetting

NAME = r"(?:NCCL|TORCH_NCCL|TORCH|CUDA|GLOO|UCX)_[A-Z0-9_]{1,60}"
VALUE = r"(?:'[^'\n]{0,200}'|\"[^\"\n]{0,200}\"|[^\s;&|'\"`]{0,200})"
# the assignments in front of a command (after a prompt or at the start of the line): NAME=VALUE NAME=VALUE ... cmd
PREFIX_RE = re.compile(rf"(?:^|[\s$#>])(?:env\s+)?(?P<assigns>(?:{NAME}={VALUE}\s+){{1,30}})"
                       r"(?:\S{0,200}/)?(?P<cmd>torchrun|srun|mpirun|mpiexec|deepspeed|accelerate|python3?|vllm|ray)\b")
ASSIGN_RE = re.compile(rf"(?P<k>{NAME})=(?P<v>{VALUE})")
MPI_EXPORT_RE = re.compile(rf"\s-x\s+(?P<k>{NAME})=(?P<v>{VALUE})")
MPI_CMD_RE = re.compile(r"(?:^|[\s$#>/])(?:mpirun|mpiexec)\s")


def command_settings(file: str, lineno: int, text: str, body: str) -> Iterator[EnvSetting]:
    """The settings a launch command line gives the job (none for any other line)."""
    line = body[:4000]
    m = PREFIX_RE.search(line)
    if m is not None:
        for a in ASSIGN_RE.finditer(m.group("assigns")):
            yield EnvSetting(file, lineno, text, a.group("k"), _unquote(a.group("v")))
    if MPI_CMD_RE.search(line):
        for x in MPI_EXPORT_RE.finditer(line):
            yield EnvSetting(file, lineno, text, x.group("k"), _unquote(x.group("v")))


def _unquote(v: str) -> str:
    return v[1:-1] if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"" else v
