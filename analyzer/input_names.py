"""Which files an input folder's walk takes and skips (shared by ingest and the cache key), and the
error for an input with nothing readable in it."""
from __future__ import annotations

from .alerts_file import ALERTS_FILE

MAX_FILES = 50_000
SKIP_NAMES = {"report.json", ALERTS_FILE, "cache.parquet", "ncclscope-env.json"}
SKIP_DIRS = {"__pycache__", "ncclscope-control"}


class InputError(Exception):
    """The input holds nothing ncclscope can read; the message says why, in one line."""
