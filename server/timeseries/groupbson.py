"""The output documents of a columnar ``$group`` made straight as BSON from the group arrays (pure).

When the groups' documents go to a cursor untouched (the ``$group``, or the ``$sort`` right after it,
is the read's last stage: ``groupbatch.GroupOutput``), ``groupstate.DenseGroups`` hands its per-slot
arrays here instead of building a dict per group for the cursor to encode. Each document is

    int32 size | head of its meta (``_id`` element, its date parts as placeholders) | tail | NUL

where a meta's *head* is the ``_id`` element of its template ``_id`` encoded once (``protocol.codec``'s
``encode_in_order``, the cursor's own encoder), with the byte offsets of its truncated-time dates, and
the *tail* is the accumulator elements, one fixed layout for every document (a double, a date or an
int32 each). All documents are laid out in one byte array with a few NumPy scatters, then cut into
``bytes`` (the documents of one head length as the items of one NumPy void type), handed on as ONE
``protocol.codec.EncodedRun`` (the cursor takes them a stretch at a time): the bytes are exactly ``encode_in_order`` of the dict the dense path would have
built (same field order, same types, the same doubles bit for bit).
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

import numpy as np

from tidemark.protocol.codec import EncodedRun, encode_in_order

DATE, DOUBLE, INT32 = 0x09, 0x01, 0x10  # the BSON types of tail values
_V8 = np.dtype((np.void, 8))
_I8 = np.dtype("<i8")
_VOIDS: dict[int, np.dtype[Any]] = {}  # (``_void``)
_EPOCH = _dt.datetime(1970, 1, 1)
_MS = _dt.timedelta(milliseconds=1)


def element(idv: Any) -> bytes | None:
    """The ``_id`` element of a document whose ``_id`` is ``idv`` (``encode_in_order``'s bytes); None
    when BSON cannot hold it (the dict path reports it)."""
    try:
        return encode_in_order({"_id": idv})[4:-1]
    except Exception:  # noqa: BLE001 - a value BSON cannot hold: the dict path reports it
        return None


def elements(idvs: list[Any]) -> list[bytes | None]:
    """``element`` of each of ``idvs``: when they are all objects, cut from one encoding of them as an
    array (an embedded document's bytes do not depend on where it sits), else one at a time."""
    if len(idvs) > 1 and all(type(idv) is dict for idv in idvs):
        try:
            data = encode_in_order({"_id": idvs})
        except Exception:  # noqa: BLE001 - a value BSON cannot hold: found one at a time below
            data = None
        if data is not None:
            out: list[bytes | None] = []
            at, end = 4 + 1 + 4 + 4, len(data) - 2  # document size, the array's type, "_id", size
            while at < end:  # (each item: type 0x03, its index as a key, a document)
                value = data.index(0, at + 1) + 1
                size = int.from_bytes(data[value:value + 4], "little")
                out.append(b"\x03_id\x00" + data[value:value + size])
                at = value + size
            return out
    return [element(idv) for idv in idvs]


def date_offsets(element: bytes, idv: Any, time_keys: list[str] | None, bare: bool) -> list[int] | None:
    """The offsets in ``element`` (the ``_id`` element of a template ``_id`` ``idv``) of the 8 bytes
    of each time part: a date, or ``idv`` itself when ``bare``; None when they cannot be located
    exactly (the caller then builds dicts)."""
    if bare:
        return [len(element) - 8]
    offsets = []
    for key in time_keys or ():
        # the time part's own element (its name and date, as the encoder writes a whole-ms naive
        # date): found exactly once, it is that part
        when = idv[key]
        if type(when) is not _dt.datetime or when.tzinfo is not None or when.microsecond % 1000:
            return None
        ms = (when - _EPOCH) // _MS
        pattern = bytes((DATE,)) + key.encode() + b"\x00" + ms.to_bytes(8, "little", signed=True)
        if element.count(pattern) != 1:
            return None
        offsets.append(element.index(pattern) + len(pattern) - 8)
    return offsets


def tail_layout(fields: tuple[tuple[str, int], ...]) -> tuple[bytes, tuple[tuple[int, int], ...]]:
    """(the tail with zeroed values, per field (offset of its value, width)) for ``fields``: (name,
    BSON type) in output order (made once per group shape: ``groupstate.facts``)."""
    template = bytearray()
    slots = []
    for name, kind in fields:
        template += bytes((kind,)) + name.encode() + b"\x00"
        width = 4 if kind == INT32 else 8
        slots.append((len(template), width))
        template += bytes(width)
    return bytes(template), tuple(slots)


def documents(heads: list[bytes], offsets: list[list[int]], owner: np.ndarray, dates: np.ndarray | None,
              tail: bytes, fills: list[tuple[int, int, np.ndarray]]) -> EncodedRun:
    """One document per entry of ``owner`` (an index into ``heads``; with one head only its length is
    read): its head with the date ``dates``
    (int64 ms; None: no time part) at each of ``offsets[owner]`` (per head, as many offsets each), then
    the tail with each field's values (``fills``: (offset, width, little-endian values)) in place.

    Each document is a row of one byte array as wide as the longest, right-aligned: the rows' tails
    share their columns (each field one slice assignment), a head's size prefix and bytes are one
    padded row taken per document, and a document is its row's bytes from where its head begins."""
    n = len(owner)
    if not n:
        return EncodedRun([])
    if len(heads) == 1:
        return one_head(heads[0], offsets[0], n, dates, tail, fills)
    date_offsets = np.asarray(offsets, dtype=np.int64).reshape(len(heads), len(offsets[0]))
    tail_len = len(tail)
    head_lens = np.fromiter((len(h) for h in heads), np.int64, len(heads))
    longest = int(head_lens.max())
    width = 4 + longest + tail_len + 1
    # per head: its size prefix and bytes, right-aligned in 4 + longest columns
    padded = np.frombuffer(b"".join(bytes(longest - len(h)) + (4 + len(h) + tail_len + 1).to_bytes(4, "little") + h
                                    for h in heads), np.uint8).reshape(len(heads), 4 + longest)
    whole = np.empty((n, width), np.uint8)
    # (rows taken as items of a void type: one copy per document, not one per byte)
    if len(heads) > 1:
        taken = padded.view(np.dtype((np.void, 4 + longest))).reshape(len(heads))[owner]
        whole[:, :4 + longest] = taken.view(np.uint8).reshape(n, 4 + longest)
    else:
        whole[:, :4 + longest] = padded
    whole[:, 4 + longest:width - 1] = np.frombuffer(tail, np.uint8)
    whole[:, width - 1] = 0
    for offset, size, values in fills:
        whole[:, 4 + longest + offset:4 + longest + offset + size] = values.view(np.uint8).reshape(n, size)
    skips = longest - head_lens  # where each head's document begins in its row
    if dates is not None and date_offsets.shape[1]:
        date_items = dates.astype("<i8").view(_V8)
        columns = skips[:, None] + 4 + date_offsets  # [heads, parts]
        # every 8 bytes of ``whole`` from any byte on as one item: a date goes in with one copy
        eights = np.ndarray((n * width - 7,), _V8, whole, 0, (1,))
        rows = np.arange(0, n * width, width)
        for part in range(date_offsets.shape[1]):
            eights[rows + columns[owner, part]] = date_items
    # documents of one head length are one length: each such set is cut as the items of a void type
    # (one bytes object per item, made by NumPy), and put back in document order
    doc_skips = skips[owner]
    lengths = np.unique(skips)
    if len(lengths) == 1:  # (a void item's tolist() is its bytes)
        skip = int(lengths[0])
        cut: Any = np.ascontiguousarray(whole[:, skip:]).view(f"V{width - skip}")[:, 0].tolist()
        return EncodedRun(cut, width - skip)  # (every document one length)
    placed = np.empty(n, dtype=object)
    for skip in lengths.tolist():
        rows = np.flatnonzero(doc_skips == skip)
        if len(rows):
            items = np.ascontiguousarray(whole[rows, skip:]).view(f"V{width - skip}")[:, 0]
            placed[rows] = items.astype(object)
    cut = placed.tolist()
    return EncodedRun(cut, width - doc_skips)


def one_head(head: bytes, date_offsets: list[int], n: int, dates: np.ndarray | None, tail: bytes,
             fills: list[tuple[int, int, np.ndarray]]) -> EncodedRun:
    """``documents`` when every document has the one head (a one-series query, or a ``_id`` reading no
    meta): one length and one layout, so the documents are that document's bytes repeated in one
    ``bytearray``, the dates and values written in their columns (each a strided view of it: one
    assignment, no copy of the values made first), and each document cut as one item of a void type."""
    size = 4 + len(head) + len(tail) + 1
    whole = bytearray((size.to_bytes(4, "little") + head + tail + b"\x00") * n)
    if dates is not None:
        for at in date_offsets:
            np.ndarray((n,), _I8, whole, 4 + at, (size,))[:] = dates
    values_at = 4 + len(head)
    for offset, _width, values in fills:
        np.ndarray((n,), values.dtype, whole, values_at + offset, (size,))[:] = values
    cut: Any = np.frombuffer(whole, _VOIDS.get(size) or _void(size)).tolist()  # (a void item's tolist(): its bytes)
    return EncodedRun(cut, size)  # (every document ``size`` long: no array of sizes made)


def _void(size: int) -> np.dtype[Any]:
    """The void type of ``size`` bytes (made once: a dtype from a string is parsed per call)."""
    found = _VOIDS.get(size)
    if found is None:
        found = np.dtype((np.void, size))
        if len(_VOIDS) < 4096:  # (a document's size: bounded by the shapes' heads and tails)
            _VOIDS[size] = found
    return found
