"""Find input files (folder, files, archives), recognise each by content, parse it to records.

I/O lives here; parsers are pure functions of lines or bytes. One job a module:

- ``files``: the folder / archive walk (which files, which entries are skipped and why);
- ``blocks``: a file's bytes as blocks of whole lines and as lines (invalid UTF-8 and NUL bytes never
  raise, lines longer than ``MAX_LINE`` are cut), a structured file read whole and bounded;
- ``formats``: a file's format from its first bytes, its origin from its name, one table from format
  to reader, ``parse_file``;
- ``assemble``: a text log's records (COLL batches and every other line, in line order);
- ``groups``: files parsed a group at a time, small logs together;
- ``handover``: a worker's result back to the analysing process through a nameless memory file;
- ``pool``: the parse as a job, in worker processes when the input is big (``start_ingest``, ``ingest``).

This module only gathers their public names.
"""
from __future__ import annotations

from ..input_names import MAX_FILES, SKIP_DIRS, SKIP_NAMES, InputError
from ..model import Format, Origin
from .assemble import PREFIX_ONLY_MAX, TEXT_AFTER_MAX, TORCH_EVIDENCE, log_records, parse_log, wrapped_join_known
from .blocks import (BLOCK_BYTES, LINE_BLOCK_BYTES, MAX_LINE, MAX_STRUCTURED_BYTES, iter_blocks, iter_lines,
                     newline_offsets, read_bounded)
from .files import LIVE_TEMP_DIRS, collect_files, file_size, remove_live_results
from .formats import LOG_EVIDENCE, READERS, Parsed, origin_of, parse_file, sniff
from .groups import GROUP_BYTES, GROUP_FILES, SMALL_LOG_BYTES, group_files, parse_job, parse_small_logs
from .pool import (KERNEL_BUILD_MIN_BYTES, KERNEL_MIN_BYTES, PARALLEL_MIN_BYTES, PROGRESS_MIN_BYTES, IngestJob,
                   ingest, pool_size, start_ingest)

__all__ = [
    "BLOCK_BYTES", "GROUP_BYTES", "GROUP_FILES", "KERNEL_BUILD_MIN_BYTES", "KERNEL_MIN_BYTES", "LINE_BLOCK_BYTES",
    "LIVE_TEMP_DIRS", "LOG_EVIDENCE", "MAX_FILES", "MAX_LINE", "MAX_STRUCTURED_BYTES", "PARALLEL_MIN_BYTES",
    "PREFIX_ONLY_MAX", "PROGRESS_MIN_BYTES", "READERS", "SKIP_DIRS", "SKIP_NAMES",
    "SMALL_LOG_BYTES", "TEXT_AFTER_MAX", "TORCH_EVIDENCE", "Format", "IngestJob", "InputError", "Origin",
    "Parsed", "collect_files", "file_size", "group_files", "ingest", "iter_blocks", "iter_lines", "log_records",
    "newline_offsets", "origin_of", "parse_file", "parse_job", "parse_log", "parse_small_logs", "pool_size",
    "read_bounded", "remove_live_results", "sniff", "start_ingest", "wrapped_join_known",
]
