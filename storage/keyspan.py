"""Where the components of an encoded key end, without decoding them (storage/keys.py's layout).

The split index layout (storage/indexes.py) cuts a stored key after a run of whole leading
components; this module finds the cut. Pure byte scanning: no value objects are built.
"""

from __future__ import annotations

from tidemark.storage.keys import (
    _END,
    _INVERT,
    _N_NEG,
    _N_POS,
    T_ARRAY,
    T_BINARY,
    T_BOOL,
    T_CODE,
    T_CODE_W_SCOPE,
    T_DATE,
    T_MAXKEY,
    T_MINKEY,
    T_NULL,
    T_NUMBER,
    T_OBJECT,
    T_OBJECTID,
    T_REGEX,
    T_STRING,
    T_TIMESTAMP,
    T_UNDEFINED,
)

_ASCENDING_TAGS = frozenset((T_MINKEY, T_UNDEFINED, T_NULL, T_NUMBER, T_STRING, T_OBJECT, T_ARRAY, T_BINARY, T_OBJECTID,
                             T_BOOL, T_DATE, T_TIMESTAMP, T_REGEX, T_CODE, T_CODE_W_SCOPE, T_MAXKEY))
# Inverted (descending) tags never collide with ascending ones, so the first byte tells the direction.
_DESCENDING_TAGS = frozenset(255 - t for t in _ASCENDING_TAGS)
assert not _ASCENDING_TAGS & _DESCENDING_TAGS
_FIXED_PAYLOAD = {T_MINKEY: 0, T_UNDEFINED: 0, T_NULL: 0, T_MAXKEY: 0, T_OBJECTID: 12, T_BOOL: 1, T_DATE: 8, T_TIMESTAMP: 8}


def _skip_cstring(key: bytes, pos: int) -> int:
    while True:
        end = key.index(b"\x00", pos)
        if key[end + 1] != 0xFF:  # an escaped NUL is 00 FF
            return end + 2
        pos = end + 2


def _skip_payload(tag: int, key: bytes, pos: int) -> int:
    fixed = _FIXED_PAYLOAD.get(tag)
    if fixed is not None:
        return pos + fixed
    if tag == T_NUMBER:
        cls = key[pos]
        if cls in (_N_NEG, _N_POS):
            return key.index(b"\xff" if cls == _N_NEG else b"\x00", pos + 3) + 1
        return pos + 1
    if tag == T_STRING:
        return _skip_cstring(key, pos)
    if tag == T_OBJECT:
        while key[pos] != _END:
            pos = _skip_payload(key[pos], key, _skip_cstring(key, pos + 1))
        return pos + 1
    if tag == T_ARRAY:
        while key[pos] != _END:
            pos = _skip_payload(key[pos], key, pos + 1)
        return pos + 1
    if tag == T_BINARY:
        return pos + 5 + int.from_bytes(key[pos:pos + 4], "big")
    if tag == T_REGEX:
        return _skip_cstring(key, _skip_cstring(key, pos))
    if tag == T_CODE:
        return _skip_cstring(key, pos)
    if tag == T_CODE_W_SCOPE:
        return _skip_payload(T_OBJECT, key, _skip_cstring(key, pos) + 1)
    raise ValueError(f"not an encoded key: unknown type tag {tag:#x} at offset {pos - 1}")


def _component_end(key: bytes, pos: int) -> int:
    """End of the encoded component (ascending or descending) starting at ``pos``."""
    tag = key[pos]
    if tag in _ASCENDING_TAGS:
        return _skip_payload(tag, key, pos + 1)
    if tag in _DESCENDING_TAGS:
        rest = key[pos:].translate(_INVERT)
        return pos + _skip_payload(255 - tag, rest, 1)
    raise ValueError(f"not an encoded key: unknown type tag {tag:#x} at offset {pos}")


class _Differs(Exception):
    pass


def _check_payload(tag: int, key: bytes, pos: int) -> int:
    """``_skip_payload`` that raises _Differs at a null or a non-zero finite number, at any depth."""
    if tag == T_NULL:
        raise _Differs
    if tag == T_NUMBER:
        if key[pos] in (_N_NEG, _N_POS):
            raise _Differs
        return pos + 1
    if tag == T_OBJECT:
        while key[pos] != _END:
            pos = _check_payload(key[pos], key, _skip_cstring(key, pos + 1))
        return pos + 1
    if tag == T_ARRAY:
        while key[pos] != _END:
            pos = _check_payload(key[pos], key, pos + 1)
        return pos + 1
    if tag == T_CODE_W_SCOPE:
        return _check_payload(T_OBJECT, key, _skip_cstring(key, pos) + 1)
    return _skip_payload(tag, key, pos)


def reads_the_same_as_format_1(key: bytes, components: int) -> bool:
    """Whether an index key stored by key format 1 is also the current format's key of the same values:
    it holds no null (format 1 keyed an empty array as null) and no non-zero finite number (format 1
    keyed a double as its 34-digit rounding), at any depth of its first ``components`` values. Other
    values were encoded alike; trailing bytes (a record id) are not read. Conservative: False may be
    said of a key that reads the same (an integer)."""
    pos = 0
    try:
        for _ in range(components):
            tag = key[pos]
            if tag in _ASCENDING_TAGS:
                pos = _check_payload(tag, key, pos + 1)
            else:
                rest = key[pos:].translate(_INVERT)
                pos += _check_payload(255 - tag, rest, 1)
    except (_Differs, ValueError, IndexError):
        return False
    return True


def first_component_length(key: bytes) -> int | None:
    """Bytes of the first encoded component of ``key`` (ascending or descending), or None if
    ``key`` does not start with a complete encoded value."""
    return leading_components_length(key, 1)


def leading_components_length(key: bytes, at_least: int) -> int | None:
    """Bytes of the shortest run of whole leading components of ``key`` that is ``at_least`` bytes
    long (all of ``key`` if it is shorter); None if ``key`` is not a sequence of encoded values."""
    pos = 0
    try:
        while pos < len(key):
            pos = _component_end(key, pos)
            if pos >= at_least:
                break
    except (ValueError, IndexError):
        return None
    return pos if 0 < pos <= len(key) else None
