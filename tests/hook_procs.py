"""What the hook tests need to start one real training process the way ``ncclscope run`` starts a rank:
a free port and the environment (the hook site on PYTHONPATH, ncclscope's tracing settings, gloo on lo)."""
from __future__ import annotations

import os
import socket
from pathlib import Path

from ncclscope.launch import merge_env, tracing_env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rank_env(run_dir: Path, site: Path, rank: int = 0, world: int = 1, port: int | None = None,
             **extra: str) -> dict[str, str]:
    """This process's environment less NCCL_* / TORCH_*, plus what ``ncclscope run`` sets, plus one rank's
    torch.distributed variables and ``extra``."""
    env, _, _ = merge_env({k: v for k, v in os.environ.items() if not k.startswith(("NCCL", "TORCH_"))},
                          tracing_env(run_dir, False, site))
    env.update({"RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_RANK": str(rank), "MASTER_ADDR": "127.0.0.1",
                "MASTER_PORT": str(port if port is not None else free_port()), "GLOO_SOCKET_IFNAME": "lo",
                "OMP_NUM_THREADS": "1", **extra})
    return env
