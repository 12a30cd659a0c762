"""Keep freed memory in the process for reuse, instead of handing it back to the kernel at once.

glibc's malloc maps every block over its mmap threshold (128 KB, raised as blocks are freed, up
to 32 MB) on its own and unmaps it when freed; the next block of that size is mapped again and the
kernel faults in and zeroes every page once more. Parsing and analysing a run allocates arrays of
megabytes to hundreds of megabytes over and over, and on the virtual machines this runs on a page
fault is expensive (memory is reclaimed behind the guest's back; docs/performance.md has the
figures).

``keep_freed_memory()`` raises both thresholds, so that blocks up to 256 MB come from the heap and up
to 512 MB of freed heap is kept. Only for processes that end when the analysis does (``analyze``, the
parse workers, ``bench``); the long-running ``serve`` and ``watch`` keep glibc's defaults. A no-op
where malloc is not glibc's.
"""
from __future__ import annotations

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3


def keep_freed_memory(mmap_threshold: int = 256 << 20, trim_threshold: int = 512 << 20) -> bool:
    """True when glibc took both settings."""
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        return bool(libc.mallopt(M_MMAP_THRESHOLD, mmap_threshold)) and bool(libc.mallopt(M_TRIM_THRESHOLD, trim_threshold))
    except (OSError, AttributeError):  # not glibc: its defaults
        return False
