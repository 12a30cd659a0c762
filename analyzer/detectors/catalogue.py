"""Known NCCL and PyTorch error texts, as the detectors ask for them: a reader of the knowledge base.

The entries live in ``ncclscope/nccl/failures.toml`` (see ``ncclscope.nccl.failures``); an entry's
``kind`` says how a detector uses it (``error``: a failure, ``config``: a setting is the cause,
``note``: worth saying, not a failure), ``meaning`` / ``hint`` are its cause and fix.
"""
from __future__ import annotations

from ..nccl.failures import Entry as KnownError
from ..nccl.failures import classify, entries

__all__ = ["KnownError", "classify", "entries"]
