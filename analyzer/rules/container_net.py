"""Ranks in containers that keep their own network: Docker's default bridge network across machines.

A process in a Docker container started without ``--network=host`` (and without ``--hostname``) runs under the
container's id as its host name: twelve hex digits (``4c1f0e9a27b3``), which torchrun's failure summary prints as the
rank's ``host``. Its addresses are the bridge's (172.17.0.x), which no other machine can reach. When the host names
the input shows are all such ids, they hold fewer ranks than the world (the other ranks run on another machine), and
the first collective fails with an NCCL system error (NCCL's sockets to the other machine; a remote error is a peer
that exited, not this), the bridge is the cause: a set-up of the containers, not a fault of a rank."""
from __future__ import annotations

import re
from collections.abc import Iterable

CONTAINER_ID_RE = re.compile(r"^(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{12}$")
NCCL_NET_ERROR_RE = re.compile(r"unhandled system error|ncclSystemError")  # not a peer that exited (ncclRemoteError)


def container_id_host(host: str) -> bool:
    """Docker's default host name for a container: its id's first twelve hex digits (a letter and a digit among them)."""
    return bool(CONTAINER_ID_RE.match(host))


def bridged_across_machines(placed: Iterable[tuple[int, int | None, str]], world: int | None,
                            errors: Iterable[str]) -> bool:
    """``placed``: (rank, local rank or None, host) as the input names them; ``world``: the job's world size;
    ``errors``: the texts of its distributed errors. True when every host named is a container id, other machines hold
    ranks of the world, and an NCCL system error is among the errors. Other machines hold ranks when a rank's global
    rank is not its local rank, or when the local ranks named are all of a machine's (0 to the highest) and fewer than
    the world; a summary that names some of a machine's ranks only says nothing."""
    rows = list(placed)
    hosts = {h for _, _, h in rows}
    if not hosts or len(hosts) > 1 or not all(container_id_host(h) for h in hosts) or world is None:
        return False
    if not any(NCCL_NET_ERROR_RE.search(t) for t in errors):
        return False
    if any(local is not None and local != rank for rank, local, _ in rows):
        return True  # a rank numbered past its machine's: the ranks before it are elsewhere
    locals_ = {local for _, local, _ in rows if local is not None}
    if len(locals_) < len(rows) or not locals_:
        return False
    return locals_ == set(range(max(locals_) + 1)) and len(locals_) < world
