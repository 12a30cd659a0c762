"""Ray workers' lines in a driver's console: Ray forwards each worker actor's output behind a prefix naming the actor
and its pid, and its ip when it runs on another node than the driver (``(RayWorkerWrapper pid=41, ip=10.0.0.2) ``,
vLLM's ``(RayWorkerVllm pid=41) ``, Ray Train's ``(RayTrainWorker pid=41) ``); the driver's own lines carry none.
A worker that states its rank as it joins the group (vLLM's and SGLang's ``world_size=4 rank=3 local_rank=1
distributed_init_method=...``, Ray Train's ``Setting up process group for: env:// [rank=3, world_size=4]``) has
that rank on every later line of its prefix (``WorkerRanks``)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

RAY_WORKER_RE = re.compile(
    r"\((?:[A-Za-z_][\w.:-]{0,100}Worker[\w.:-]{0,100}) pid=(?P<pid>\d{1,10})(?:, ?ip=(?P<ip>[\w.:-]{1,64}))?\) ")
STATED_RANK_RE = re.compile(r"\bworld_size=\d{1,7} rank=(?P<rank>\d{1,7}) local_rank=\d{1,7} "
                            r"|Setting up process group for: \S{1,300} \[rank=(?P<rank2>\d{1,7}), world_size=\d{1,7}\]")
MAX_WORKERS = 1 << 16


def stated_rank(body: str) -> int | None:
    """The rank a process states of itself as it joins its group (``world_size=2 rank=0 local_rank=0
    distributed_init_method=...``, ``Setting up process group for: env:// [rank=3, world_size=4]``); None otherwise."""
    if "rank=" not in body or (m := STATED_RANK_RE.search(body)) is None:
        return None
    return int(m.group("rank") if m.group("rank") is not None else m.group("rank2"))


def worker_key(text: str) -> tuple[str, str] | None:
    """(pid, ip) of the Ray worker whose prefix the line carries (ip "" on the driver's node); None if it carries none."""
    m = RAY_WORKER_RE.search(text[:300])
    return (m.group("pid"), m.group("ip") or "") if m else None


@dataclass
class WorkerRanks:
    """The rank each Ray worker of one console stated, as the console is read in order."""

    stated: dict[tuple[str, str], int | None] = field(default_factory=dict)  # None: it stated two ranks

    def rank(self, text: str, body: str) -> int | None:
        """The rank of a line of a Ray worker that stated one on this line or before; None otherwise."""
        if "pid=" not in text[:300]:
            return None
        key = worker_key(text)
        if key is None:
            return None
        if (r := stated_rank(body)) is not None:
            if key not in self.stated and len(self.stated) < MAX_WORKERS:
                self.stated[key] = r
            elif self.stated.get(key, r) != r:
                self.stated[key] = None
        return self.stated.get(key)
