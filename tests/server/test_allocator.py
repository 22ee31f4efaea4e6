"""Issue 23.2: large blocks stay mappings of their own (tidemark.allocator). glibc raised its mmap
threshold to the size of every large block freed, so later large buffers came from the heap and
arenas, which kept them: the writer thread's arena reached 55 MB on a 1-day load with frequent
checkpoints (21 MB with the threshold fixed)."""

import subprocess
import sys

import pytest

PROBE = """
import ctypes, sys
if sys.argv[1] == "fixed":
    from tidemark.allocator import fix_mmap_threshold
    assert fix_mmap_threshold()
big = bytearray(8 << 20)  # a mapping of its own (over 128 KiB) ...
del big  # ... freed: glibc would now raise its threshold to 8 MiB
block = bytearray(1 << 20)
address = ctypes.addressof((ctypes.c_char * len(block)).from_buffer(block))
for line in open("/proc/self/maps"):
    span, *rest = line.split()
    lo, hi = (int(x, 16) for x in span.split("-"))
    if lo <= address < hi:
        print("heap" if line.rstrip().endswith("[heap]") else "own mapping")
"""


def where_a_large_block_goes(mode):
    out = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True, check=True)
    return out.stdout.strip()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator, /proc/self/maps")
def test_a_large_block_is_a_mapping_of_its_own_after_a_larger_one_was_freed():
    if where_a_large_block_goes("default") != "heap":
        pytest.skip("this libc does not raise its mmap threshold (not glibc?)")
    assert where_a_large_block_goes("fixed") == "own mapping"
