"""Nodes that do not run the same NCCL: an environment mismatch, the set-up's fault rather than a plain hang.

A job's processes must load the same NCCL and reach each other through the same network plugin. When the input shows
them disagree, whatever went wrong after (a hang at init or at the first collective, NCCL's own 'version mismatch',
a connection that fails) is explained by the set-up: ``verdict`` makes it a config error naming what differs.

- The network plugin, per host: the plugin NCCL loaded (``NET/Plugin: Loaded net plugin NAME``) or its internal one
  (``No plugin found``, ``Could not find: libnccl-net.so. Using internal ...``), and the network it then used (``Using
  network IBext_v8`` on one node, ``Using network IB`` or ``Socket`` on another). Hosts that name different ones differ.
- The NCCL release, per process (``NCCL version 2.18.5`` on some, ``2.21.5`` on others).

A job that ended well with such a difference is only noted; nothing here decides a verdict by itself.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

INTERNAL = "internal"
LOADED_RE = re.compile(r"Loaded (?:net|coll) ?plugin:? (?P<name>.{1,80}?)(?: \(v\d{1,3}\))?\s*$")
NO_PLUGIN_WORDS = ("No plugin found", "Could not find: libnccl-net", "Using internal net", "internal network plugin",
                   "internal implementation")


@dataclass(frozen=True, slots=True)
class Mismatch:
    """What differs between the job's hosts or processes: ``what`` (``network plugin``, ``network``, ``NCCL
    version``) and, for each value, the hosts (or processes) that show it, in the order they were first seen."""

    what: str
    values: tuple[tuple[str, tuple[str, ...]], ...]

    def describe(self) -> str:
        return "; ".join(f"{value} on {', '.join(who[:4])}{' and more' if len(who) > 4 else ''}"
                         for value, who in self.values)


def plugin_of(message: str) -> str | None:
    """The network plugin an ``NET/Plugin`` line names: the loaded plugin's name, ``internal`` for NCCL's own, else
    None (a line about a symbol or a collnet plugin says nothing of the net plugin in use)."""
    if "collnet" in message.lower() or "CollNet" in message:
        return None
    m = LOADED_RE.search(message)
    if m is not None and "net plugin" in message:
        return m.group("name").strip()
    if any(w in message for w in NO_PLUGIN_WORDS):
        return INTERNAL
    return None


def differing(by_host: Iterable[tuple[str, str]], what: str) -> Mismatch | None:
    """``by_host``: (host, value) pairs as the lines give them (a host may repeat; its first value counts). A mismatch
    when two hosts or more give different values."""
    first: dict[str, str] = {}
    for host, value in by_host:
        first.setdefault(host, value)
    groups: dict[str, list[str]] = {}
    for host, value in first.items():
        groups.setdefault(value, []).append(host)
    if len(groups) < 2:
        return None
    return Mismatch(what, tuple((v, tuple(hs)) for v, hs in groups.items()))


def environment_mismatch(plugins: Iterable[tuple[str, str]], networks: Iterable[tuple[str, str]],
                         versions: Mapping[str, str]) -> Mismatch | None:
    """The first difference the input shows: the net plugin hosts loaded, the network they used, the NCCL release of
    each process (``versions``: process -> version)."""
    return (differing(plugins, "network plugin") or differing(networks, "network")
            or differing(versions.items(), "NCCL version"))


# nccl-tests' own abort, which names the host of the process whose NCCL call failed ("node-b: Test NCCL failure
# common.cu:958 'unhandled system error'")
TEST_FAILURE_HOST_RE = re.compile(r"^\s*(?P<host>[A-Za-z0-9][A-Za-z0-9_.-]{0,254}): Test NCCL failure ")


def quiet_hosts(printing: Iterable[str], placed: Iterable[str], failed: Iterable[str]) -> tuple[str, ...]:
    """Hosts that ran NCCL without the environment other hosts of the job show. ``printing``: the hosts whose processes
    printed NCCL lines into the input; ``placed``: the hosts that hold ranks of the job; ``failed``: the hosts of
    processes whose NCCL call failed, in the same console (so NCCL ran there). A host that holds ranks and failed in
    NCCL but printed no NCCL line while other hosts did ran with another NCCL_DEBUG, so with another environment:
    the variables set for the job (in the launching shell, in front of the launcher) reached some hosts only."""
    seen = set(printing)
    where = set(placed)
    if not seen:
        return ()
    return tuple(dict.fromkeys(h for h in failed if h in where and h not in seen))
