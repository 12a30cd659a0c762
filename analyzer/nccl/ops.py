"""Collective names: one canonical spelling, whatever the source wrote.

The canonical name is lower case with no separators (``allreduce``, ``reducescatter``), the form
the model's tables and findings use. NCCL's logs write ``AllReduce``, PyTorch's Flight Recorder
``nccl:all_reduce``, its work objects ``OpType.ALLREDUCE``, nccl-tests ``all_reduce_perf``;
``torch_name`` gives the ``torch.distributed`` function name (``all_reduce``) that ``ncclscope
perf`` and nccl-tests print.
"""
from __future__ import annotations

# the names NCCL prints in COLL and TUNING lines -> canonical
NCCL_OPS: dict[str, str] = {
    "AllReduce": "allreduce",
    "AllGather": "allgather",
    "ReduceScatter": "reducescatter",
    "Broadcast": "broadcast",
    "Reduce": "reduce",
    "Send": "send",
    "Recv": "recv",
    "AlltoAll": "alltoall",
    "Gather": "gather",
    "Scatter": "scatter",
    "PutSignal": "putsignal",
    "Signal": "signal",
    "WaitSignal": "waitsignal",
}

# PyTorch's variants of one collective (tensor / base / coalesced forms) and short spellings
_ALIASES: dict[str, str] = {
    "reducescattertensor": "reducescatter", "allgatherintotensor": "allgather",
    "reducescatterbase": "reducescatter", "allgatherbase": "allgather",
    "alltoallbase": "alltoall", "alltoallsingle": "alltoall", "allreducecoalesced": "allreduce",
    "all2all": "alltoall", "bcast": "broadcast",
}

# canonical -> the torch.distributed function (and nccl-tests binary) name
TORCH_NAMES: dict[str, str] = {
    "allreduce": "all_reduce", "allgather": "all_gather", "reducescatter": "reduce_scatter",
    "alltoall": "all_to_all", "broadcast": "broadcast", "reduce": "reduce", "gather": "gather",
    "scatter": "scatter", "barrier": "barrier", "send": "send", "recv": "recv",
}


def canonical_op(name: str) -> str:
    """``nccl:all_reduce`` / ``OpType.ALLREDUCE`` / ``all_reduce`` / ``AllReduce`` /
    ``all_reduce_perf`` -> ``allreduce``; an unknown name comes back lower case, without ``_``."""
    n = name.rsplit(":", 1)[-1] if ":" in name else name
    n = n.rsplit(".", 1)[-1]
    n = n.strip().split(" ", 1)[0]
    n = n.lower().removesuffix("_perf").replace("_", "")
    return _ALIASES.get(n, n)


def torch_name(name: str) -> str:
    """Any spelling -> the ``torch.distributed`` name (``all_reduce``); unknown names lower case."""
    c = canonical_op(name)
    return TORCH_NAMES.get(c, name.strip().lower().removesuffix("_perf"))
