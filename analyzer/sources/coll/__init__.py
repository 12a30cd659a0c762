"""The NCCL COLL-line readers, sealed: whatever reads a block, its rows are the rows of the regex.

- ``grammar``: the line, defined once (field limits, fragments, the regexes built from them);
- ``scan``: ``scan_coll_block`` (a block of lines -> one batch of COLL rows + every other line)
  and ``scan_coll_block_regex``, the reference;
- ``columns``: the numpy reader; ``kernel``: the compiled one (numba, optional: the ``fast``
  extra), built ahead of time and loaded safely by ``kernel_build``;
- ``batch``: ``NcclCollBatch``, the rows as columns; ``timestamps``: NCCL's timestamps as seconds.

The contract, held by ``tests/sources/test_coll_columns.py``: for any block, ``scan_coll_block`` with either
fast reader gives exactly the rows and other lines of ``scan_coll_block_regex``.
"""
from __future__ import annotations

from .batch import NcclCollBatch, concat_batches, merge_batches
from .grammar import MESSAGE_RE
from .scan import scan_coll_block, scan_coll_block_regex
from .timestamps import parse_ts

__all__ = ["MESSAGE_RE", "NcclCollBatch", "concat_batches", "merge_batches", "parse_ts", "scan_coll_block",
           "scan_coll_block_regex"]
