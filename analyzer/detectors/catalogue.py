"""Known NCCL and PyTorch error texts, each with what it means and what to do."""
from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class KnownError:
    pattern: re.Pattern[str]
    kind: str
    meaning: str
    hint: str


def _k(p: str, kind: str, meaning: str, hint: str) -> KnownError:
    return KnownError(re.compile(p, re.IGNORECASE), kind, meaning, hint)


CATALOGUE: list[KnownError] = [
    _k(r"no algorithm/protocol available.*NCCL_(ALGO|PROTO) was set", "config",
       "a forced NCCL_ALGO / NCCL_PROTO cannot run this collective",
       "Unset NCCL_ALGO / NCCL_PROTO (NCCL picks per collective), or allow several: NCCL_ALGO=Ring,Tree."),
    _k(r"Connection closed by remote peer", "error", "a peer process closed its socket (it died or aborted)",
       "Find the peer that died first (its exit code, its own log); this rank is an echo."),
    _k(r"Connection reset by peer|Call to (recv|send) .* failed", "error", "a socket to a peer broke",
       "A peer died or the network dropped: check the peer's log, NCCL_SOCKET_IFNAME, firewalls, MTU."),
    _k(r"Got completion from peer .* (status=|error )12\b|RETRY_EXC", "error",
       "InfiniBand retry exceeded: the peer stopped answering on the fabric",
       "Check the link (ibstat, port counters), raise NCCL_IB_TIMEOUT (e.g. 22), look for a dead peer."),
    _k(r"Got completion from peer", "error", "an InfiniBand work completion failed",
       "Check the HCA and port (ibstat, dmesg), NCCL_IB_HCA, and the peer named in the line."),
    _k(r"out of memory|CUDA error: out of memory|cudaErrorMemoryAllocation", "error", "the GPU ran out of memory",
       "Lower the batch or NCCL_BUFFSIZE, or free memory before communicator init."),
    _k(r"Cuda failure|unhandled cuda error|CUDA error", "error", "a CUDA call failed",
       "Look at dmesg for Xid errors and at nvidia-smi; the CUDA error text names the cause."),
    _k(r"invalid usage|ncclInvalidUsage", "error", "NCCL rejected how it was called",
       "Read the WARN line before it: it names the argument or setting."),
    _k(r"socketStartConnect: exceeded retries|bootstrap.*(timeout|failed)", "error",
       "bootstrap could not reach a peer", "Check MASTER_ADDR / MASTER_PORT, NCCL_SOCKET_IFNAME and firewalls."),
    _k(r"Mismatched NCCL version", "config", "ranks run different NCCL versions",
       "Install the same NCCL (and torch build) on every node."),
    _k(r"ring \d+ does not loop back", "error", "NCCL built an inconsistent ring", "Report to NCCL; check topology files."),
    _k(r"Exception raised (from|in).*hook|on_completion", "error", "an exception was raised inside a hook",
       "A callback registered on the process group raised; exceptions there abort the communicator."),
]


def classify(text: str) -> KnownError | None:
    for k in CATALOGUE:
        if k.pattern.search(text):
            return k
    return None
