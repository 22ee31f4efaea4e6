"""``keys.prefix_end``: the least byte string above every string starting with a prefix (what storage
scans an exclusive start or an inclusive end up to), None when none is (empty, or all 0xFF)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.storage.keys import prefix_end

# a few byte values (neighbours, and 0xFF runs: the edge), so that strings fall just past an end
BYTES = st.lists(st.sampled_from([0, 1, 2, 3, 0xFD, 0xFE, 0xFF]), max_size=4).map(bytes)


@settings(max_examples=500, deadline=None)
@given(BYTES, BYTES)
def test_prefix_end_bounds_exactly_the_strings_with_the_prefix(prefix, other):
    end = prefix_end(prefix)
    if end is None:
        assert prefix.strip(b"\xff") == b""
        return
    assert end > prefix
    # a string is below the end exactly when it is below the prefix or starts with it
    assert (other < end) == (other < prefix or other.startswith(prefix))
