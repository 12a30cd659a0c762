"""The rendezvous address each node's launch command names, and whether the nodes of one job disagree on it.

Every node of a multi-node job must name the same init address: the host (and port) of the node with rank 0
(``torchrun --master_addr / --rdzv_endpoint``, ``python -m torch.distributed.launch --master_addr``, SGLang's
``--nccl-init-addr`` / ``--dist-init-addr``, ``--init_method tcp://``, ``MASTER_ADDR=`` before the command). A node
started with its own address waits for a group that never forms there, and so do the others. Only literal IPv4
addresses are compared (a host name and an address may name one host); one file, one node's launch."""
from __future__ import annotations

import re
from collections.abc import Iterable

ADDR_FLAG_RE = re.compile(
    r"(?:--(?:nccl-init(?:-addr)?|dist-init-addr|master[_-]addr|rdzv[_-]endpoint|init[_-]method)(?:=| +)|"
    r"\bMASTER_ADDR=)['\"]?(?:tcp://)?(?P<host>\d{1,3}(?:\.\d{1,3}){3})(?::(?P<port>\d{1,5}))?")
PORT_FLAG_RE = re.compile(r"(?:--master[_-]port(?:=| +)|\bMASTER_PORT=)['\"]?(?P<port>\d{1,5})")
NODES_FLAG_RE = re.compile(r"--(?:nnodes|num[_-]machines)(?:=| +)['\"]?(?P<n>\d{1,5})")


def launch_address(line: str) -> tuple[str, str | None] | None:
    """(host, port) a launch command line names as the rendezvous, or None where it names no literal address."""
    m = ADDR_FLAG_RE.search(line)
    if m is None:
        return None
    port = m.group("port")
    if port is None and (p := PORT_FLAG_RE.search(line)) is not None:
        port = p.group("port")
    return m.group("host"), port


def multi_node(line: str) -> bool:
    """The command asks for more than one node."""
    m = NODES_FLAG_RE.search(line)
    return m is not None and int(m.group("n")) > 1


def disagreeing(lines: Iterable[tuple[str, str]]) -> dict[str, tuple[str, str | None]]:
    """``lines``: (file, text) of launch command lines. file -> the address its launch names, where the files' multi-node
    launches name more than one address (each file naming one); else empty. Two files that name one host with no port
    in one of them do not disagree."""
    by_file: dict[str, set[tuple[str, str | None]]] = {}
    for file, text in lines:
        a = launch_address(text)
        if a is not None and multi_node(text):
            by_file.setdefault(file, set()).add(a)
    one = {f: next(iter(s)) for f, s in by_file.items() if len(s) == 1}
    if len(one) < 2:
        return {}
    hosts = {h for h, _ in one.values()}
    ports = {p for _, p in one.values()}
    if len(hosts) > 1 or (None not in ports and len(ports) > 1):
        return one
    return {}


# c10d's client failing to reach the store at a loopback address ("... failed to connect to [localhost]:29500
# (errno: 111 - Connection refused)", "... to 127.0.0.1:29500 ...")
# and its time-out ("... timed out after 1800s while trying to connect to (127.0.0.1, 29500)", "... failed to connect to any
# network address of (localhost, 29500)")
LOOPBACK_CONNECT_RE = re.compile(r"(?:failed to connect to (?:any network address of )?|trying to connect to )"
                                 r"[(\[]?(?P<host>localhost|127\.\d{1,3}\.\d{1,3}\.\d{1,3}|::1)\]?(?::|, )"
                                 r"(?P<port>\d{1,5})")
# a line that states a process's global and local rank: a script's "rank 10/16 local_rank 2", "RANK=5 LOCAL_RANK=1",
# torchrun's failure summary "rank      : 3 (local_rank: 1)"
RANK_AND_LOCAL_RE = re.compile(r"(?<![a-z_])rank\s{0,20}[:=]?\s{0,20}(?P<rank>\d{1,7})\b(?:\s{0,3}/\s{0,3}\d{1,7})?"
                               r"[^\n]{0,40}?\blocal[_ ]rank\s{0,3}[:=]?\s{0,3}(?P<local>\d{1,5})\b", re.IGNORECASE)


def loopback_targets(texts: Iterable[str]) -> tuple[str, ...]:
    """The loopback addresses (host:port, first seen first) that c10d's client failed to reach in ``texts``."""
    found = (LOOPBACK_CONNECT_RE.search(t) for t in texts)
    return tuple(dict.fromkeys(f"{m.group('host')}:{m.group('port')}" for m in found if m is not None))


def spans_machines(texts: Iterable[str], nodes: int) -> bool:
    """The job's ranks run on more than one machine: ``nodes`` (the hosts or node count the input states) above one,
    or a line stating a global rank other than the process's local rank (the ranks below it run on another machine)."""
    if nodes > 1:
        return True
    return any(m.group("rank") != m.group("local") for t in texts for m in RANK_AND_LOCAL_RE.finditer(t[:2000]))


def loopback_rendezvous(failed: Iterable[str], stated: Iterable[str], nodes: int) -> tuple[str, ...]:
    """A multi-machine job whose processes look for the rendezvous store at a loopback address (MASTER_ADDR=localhost
    or 127.0.0.1 on every node): each machine can only reach itself, so the group never forms. ``failed``: the texts of
    c10d's client and store failures; ``stated``: lines that may state a rank and its local rank; ``nodes``: the hosts
    or node count the input states. The loopback targets, or () where the text does not show both."""
    targets = loopback_targets(failed)
    return targets if targets and spans_machines(stated, nodes) else ()
