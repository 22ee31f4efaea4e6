"""The output documents of a columnar ``$group`` made straight as BSON from the group arrays (pure).

When the groups' documents go to a cursor untouched (the ``$group``, or the ``$sort`` right after it,
is the read's last stage: ``groupbatch.GroupOutput``), ``groupstate.DenseGroups`` hands its per-slot
arrays here instead of building a dict per group for the cursor to encode. Each document is

    int32 size | head of its meta (``_id`` element, its date parts as placeholders) | tail | NUL

where a meta's *head* is the ``_id`` element of its template ``_id`` encoded once (``protocol.codec``'s
``encode_in_order``, the cursor's own encoder), with the byte offsets of its truncated-time dates, and
the *tail* is the accumulator elements, one fixed layout for every document (a double, a date or an
int32 each). All documents are laid out in one byte array with a few NumPy scatters, then cut into
``EncodedDocument``s: the bytes are exactly ``encode_in_order`` of the dict the dense path would have
built (same field order, same types, the same doubles bit for bit).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tidemark.protocol.codec import EncodedDocument, encode_in_order

DATE, DOUBLE, INT32 = 0x09, 0x01, 0x10  # the BSON types of tail values
_ARANGE4, _ARANGE8 = np.arange(4), np.arange(8)


def head(idv: Any, time_keys: list[str] | None, bare: bool) -> tuple[bytes, list[int]] | None:
    """(the ``_id`` element of a template ``_id`` ``idv``, the offsets in it of the 8 bytes of each
    time part: a date, or ``idv`` itself when ``bare``); None when they cannot be located exactly
    (the caller then builds dicts)."""
    try:
        element = encode_in_order({"_id": idv})[4:-1]
        # each time part's own element (its name and date): found exactly once, it is that part
        patterns = [encode_in_order({key: idv[key]})[4:-1] for key in time_keys or ()]
    except Exception:  # noqa: BLE001 - a value BSON cannot hold: the dict path reports it
        return None
    if bare:
        return element, [len(element) - 8]
    offsets = []
    for pattern in patterns:
        if pattern[0] != DATE or element.count(pattern) != 1:
            return None
        offsets.append(element.index(pattern) + len(pattern) - 8)
    return element, offsets


def tail_layout(fields: list[tuple[str, int]]) -> tuple[bytes, list[tuple[int, int]]]:
    """(the tail with zeroed values, per field (offset of its value, width)) for ``fields``: (name,
    BSON type) in output order."""
    template = bytearray()
    slots = []
    for name, kind in fields:
        template += bytes((kind,)) + name.encode() + b"\x00"
        width = 4 if kind == INT32 else 8
        slots.append((len(template), width))
        template += bytes(width)
    return bytes(template), slots


def documents(heads: list[bytes], date_offsets: np.ndarray, owner: np.ndarray, dates: np.ndarray | None,
              tail: bytes, fills: list[tuple[int, int, np.ndarray]]) -> list[EncodedDocument]:
    """One document per entry of ``owner`` (an index into ``heads``): its head with the date ``dates``
    (int64 ms; None: no time part) at each of ``date_offsets[owner]`` (int64 [heads, parts]), then the
    tail with each field's values (``fills``: (offset, width, little-endian values)) in place."""
    n = len(owner)
    if not n:
        return []
    block = np.empty((n, len(tail)), np.uint8)
    block[:] = np.frombuffer(tail, np.uint8)
    for offset, width, values in fills:
        block[:, offset:offset + width] = values.view(np.uint8).reshape(n, width)
    if len(heads) == 1:  # one size for every document: they are the rows of one array
        return _rows(heads[0], date_offsets[0], dates, block)
    head_lens = np.fromiter((len(h) for h in heads), np.int64, len(heads))
    lens = head_lens[owner]
    tail_len = len(tail)
    sizes = lens + (4 + tail_len + 1)
    ends = np.cumsum(sizes)
    starts = ends - sizes
    buf = np.zeros(int(ends[-1]), np.uint8)
    buf[starts[:, None] + _ARANGE4] = sizes.astype("<i4").view(np.uint8).reshape(n, 4)
    # the heads: every document's head bytes copied from the heads laid end to end
    blob = np.frombuffer(b"".join(heads), np.uint8)
    head_starts = np.cumsum(head_lens) - head_lens
    total = int(lens.sum())
    firsts = np.cumsum(lens) - lens
    inner = np.arange(total) - np.repeat(firsts, lens)
    buf[np.repeat(starts + 4, lens) + inner] = blob[np.repeat(head_starts[owner], lens) + inner]
    if dates is not None and date_offsets.shape[1]:
        date_bytes = dates.astype("<i8").view(np.uint8).reshape(n, 8)
        for part in range(date_offsets.shape[1]):
            buf[(starts + 4 + date_offsets[owner, part])[:, None] + _ARANGE8] = date_bytes
    buf[(starts + 4 + lens)[:, None] + np.arange(tail_len)] = block
    data = buf.tobytes()
    return [EncodedDocument(data[a:b]) for a, b in zip(starts.tolist(), ends.tolist(), strict=True)]


def _rows(head: bytes, date_offsets: np.ndarray, dates: np.ndarray | None, block: np.ndarray) -> list[EncodedDocument]:
    """``documents`` of one head: every document the same size, each a row of one byte array."""
    n, tail_len = block.shape
    size = 4 + len(head) + tail_len + 1
    whole = np.empty((n, size), np.uint8)
    whole[:, :4] = np.frombuffer(np.int32(size).astype("<i4").tobytes(), np.uint8)
    whole[:, 4:4 + len(head)] = np.frombuffer(head, np.uint8)
    if dates is not None:
        date_bytes = dates.astype("<i8").view(np.uint8).reshape(n, 8)
        for offset in date_offsets.tolist():
            whole[:, 4 + offset:12 + offset] = date_bytes
    whole[:, 4 + len(head):size - 1] = block
    whole[:, size - 1] = 0
    data = whole.tobytes()
    return [EncodedDocument(data[i:i + size]) for i in range(0, n * size, size)]
