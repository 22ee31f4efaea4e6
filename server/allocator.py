"""glibc's allocator, set once at start: large blocks are always mappings of their own.

glibc serves a block of ``M_MMAP_THRESHOLD`` (128 KiB) or more with a mapping of its own, returned to
the system when freed, but raises that threshold to the size of every such block freed (up to 32 MiB):
after the first few, the large short-lived buffers of a load (insert messages, journal records, bucket
documents, zstd output, liblmdb's overflow pages) come from the heap and its per-thread arenas, which
keep the pages they touched and give back only their free top. Measured (bench.scaling's 1-day load
with a checkpoint every 3 s): the writer thread's arena reached 55 MB and the process's anonymous
peak 115 MB; with the threshold fixed, 21 MB and 77 MB. Setting the threshold explicitly is what turns
the raising off (mallopt(3)). Elsewhere than glibc this does nothing.
"""

from __future__ import annotations

import ctypes

M_MMAP_THRESHOLD = -3  # <malloc.h>
MMAP_THRESHOLD_BYTES = 128 * 1024  # glibc's own starting value, kept


def fix_mmap_threshold() -> bool:
    """True when glibc took the fixed threshold."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES))
