"""core.collection.check_collection_name: a namespace longer than 255 UTF-8 bytes is 73 "Fully qualified
namespace is too long", whatever its characters (1 to 4 bytes each, lone surrogates 3) — the check counts
characters first and encodes only names that may be too long, so the family of names near the limit is
tested against the bytes themselves."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tidemark.core.collection import MAX_NAMESPACE_BYTES, check_collection_name
from tidemark.protocol.errors import MongoError

# names as counts of characters of each UTF-8 length (1 to 4 bytes) and of lone surrogates (3 bytes: a name
# may carry one, counted with surrogatepass), so that they fall either side of the limit in bytes
# whatever their length in characters
_NAMES = st.lists(st.integers(0, 80), min_size=5, max_size=5).map(
    lambda counts: "".join(c * n for c, n in zip(["a", "é", "€", "😀", "\ud800"], counts, strict=True)) or "a")


def _too_long(db: str, name: str) -> bool:
    return len(db.encode()) + 1 + len(name.encode("utf-8", "surrogatepass")) > MAX_NAMESPACE_BYTES


@given(st.text(alphabet=st.sampled_from(["d", "é", "€", "😀"]), min_size=1, max_size=63),
       _NAMES)
def test_too_long_exactly_when_its_bytes_are(db, name):
    try:
        check_collection_name(db, name)
    except MongoError as exc:
        assert exc.code == 73 and "Fully qualified namespace is too long" in str(exc)
        assert _too_long(db, name)
    else:
        assert not _too_long(db, name)


@pytest.mark.parametrize("name", ["", "a$b", "a\0b", ".a"])
def test_other_rules_first(name):
    with pytest.raises(MongoError) as info:
        check_collection_name("db", name)
    assert info.value.code == 73
