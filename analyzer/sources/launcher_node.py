"""One node from what a single launcher's file shows of the whole world.

- torchrun's ``--tee`` tag ``[default7]:`` names a *local* rank (its role, ``default``, then the worker's local rank;
  the global rank is ``[rank7]:``): a local rank ``W - 1`` where the file states a world of ``W`` means that node runs
  all ``W`` processes, so the job has one node.
- torchrun's (and ``torch.distributed.launch``'s) banner ``Setting OMP_NUM_THREADS environment variable for each
  process to be 1 in default ...`` is printed once by each node's launcher. A file holding that banner once (one
  agent: no second agent pid on torchrun's own lines) in which every rank ``0 .. W-1`` of the world it states prints
  (a launcher's rank tag, a script's ``[rank3]`` print, the torchvision reference scripts' ``| distributed init (rank
  3): env://``) holds the output of one launcher that started the whole world: one node. A multi-node job whose nodes
  write into one file shows one banner per node; a node's own file shows only its share of the ranks.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

OMP_BANNER = "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default"
DEFAULT_TAG_RE = re.compile(r"\[default(?P<n>\d{1,7})\]:")
# torchvision's reference scripts' (DETR, DeiT, MAE ...) print as each process joins: "| distributed init (rank 3): env://"
DIST_INIT_RE = re.compile(r"\| distributed init \(rank (?P<r>\d{1,7})\)")
AGENT_PID_RE = re.compile(r"^[IWE]\d{4} [\d:.]{8,20} (?P<pid>\d{1,10}) torch/distributed/")
MAX_RANKS = 1 << 16
MAX_PIDS = 64


@dataclass(slots=True)
class LauncherView:
    """What one file shows of its launchers and ranks, for ``one_node``."""

    banners: int = 0
    agent_pids: set[int] = field(default_factory=set)
    max_local: int = -1  # the highest local rank a ``[defaultN]:`` tag named
    ranks: set[int] = field(default_factory=set)  # ranks a script's own join print named
    where: tuple[int, str] | None = None  # (line, text): the banner, else the tag of the highest local rank

    def read(self, lineno: int, text: str) -> None:
        """Take what the line says of the launcher (its banner, its agent's pid) and of the ranks."""
        if "[default" in text[:300] and (d := DEFAULT_TAG_RE.search(text[:300])) is not None \
                and int(d.group("n")) > self.max_local:
            self.max_local = int(d.group("n"))
            self.where = (lineno, text) if not self.banners else self.where
        if OMP_BANNER in text:
            self.banners += 1
            self.where = (lineno, text)
        if text[:1] in "IWE" and " torch/distributed/" in text[:120] and len(self.agent_pids) < MAX_PIDS \
                and (a := AGENT_PID_RE.match(text)) is not None:
            self.agent_pids.add(int(a.group("pid")))
        if "distributed init (rank" in text and (r := DIST_INIT_RE.search(text)) is not None \
                and len(self.ranks) < MAX_RANKS:
            self.ranks.add(int(r.group("r")))

    def one_node(self, worlds: set[int], tagged: set[int]) -> bool:
        """The file shows one node running the whole world: ``worlds`` the world sizes the file states (one, above 1),
        ``tagged`` the ranks a launcher's tag or a script's rank prefix named in it."""
        if len(worlds) != 1:
            return False
        world = next(iter(worlds))
        if not 1 < world <= MAX_RANKS:
            return False
        if self.max_local == world - 1:
            return True
        return self.banners == 1 and len(self.agent_pids) <= 1 and set(range(world)) <= (tagged | self.ranks)
