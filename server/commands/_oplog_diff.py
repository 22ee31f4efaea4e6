"""MongoDB's ``$v: 2`` update diffs (oplog ``u`` entries): reading and applying them, as mongod 7.0 does.

A document diff has, in this order, the sections ``d`` (fields to delete: ``{name: false}``), ``u``
(fields to set in place, appended when absent), ``i`` (fields to insert: always moved to the end) and
any number of ``s<name>`` sub-diffs (an object diff, or an array diff when it starts with
``a: true``). An array diff may resize the array (``l: <int>``: truncated, or padded with null) and
set (``u<index>``) or diff (``s<index>``) elements, in index order.

Re-applying a diff must be harmless (oplog replay is idempotent): a sub-diff whose target has another
type makes it null (a later entry rewrites it), an index past the end is padded with null, a sub-diff
of a missing field does nothing. Pure functions; malformed diffs raise mongod's codes (4770500 ...).
"""

from __future__ import annotations

from typing import Any

from tidemark.protocol.errors import MongoError

_ORDER = {"d": 1, "u": 2, "i": 3, "s": 4}


def _section_error(name: str, kind: str) -> MongoError:
    return MongoError(4770507, f"Expected {name} section to be type {kind}")


def _read_document_diff(diff: dict) -> tuple[dict[str, tuple[str, Any]], list[tuple[str, Any]]]:
    """(field -> (kind, value), fields to append in order) for one document diff."""
    if not diff:
        raise MongoError(4770500, "Expected diff to be non-empty")
    mods: dict[str, tuple[str, Any]] = {}
    appended: list[tuple[str, Any]] = []
    previous = 0

    def put(name: str, kind: str, value: Any) -> None:
        if name in mods:
            raise MongoError(4728000, f"duplicate field name in diff: {name}")
        mods[name] = (kind, value)

    in_subdiffs = False
    for key, value in diff.items():
        if in_subdiffs:
            if not key.startswith("s"):
                raise MongoError(4770514, f"Did not expect more sections in diff but found one: {key}")
        elif not key:
            raise MongoError(4770505, "Expected sections field names in diff to be non-empty ")
        else:
            order = _ORDER.get(key[0])
            if order is None or order <= previous:
                raise MongoError(4770503, f"Unexpected section: {key[0]} in document diff")
            previous = order
            in_subdiffs = order == 4
        if not isinstance(value, dict):
            if in_subdiffs:
                raise MongoError(470510, f"Subdiffs should be objects, got {key}: {value!r}")
            raise _section_error(key[0], "object")
        if key[0] == "d":
            for name in value:
                put(name, "d", None)
        elif key[0] in ("u", "i"):
            for name, new in value.items():
                put(name, key[0], new)
                appended.append((name, new))
        else:
            put(key[1:], "s", value)
    return mods, appended


def apply_diff(doc: dict, diff: dict) -> dict:
    """``doc`` with the document diff ``diff`` applied (a new dict; ``doc`` is not changed)."""
    mods, appended = _read_document_diff(diff)
    out: dict = {}
    placed: set[str] = set()
    for name, value in doc.items():
        mod = mods.get(name)
        if mod is None:
            out[name] = value
            continue
        kind, new = mod
        if kind == "u":
            out[name] = new
            placed.add(name)
        elif kind == "s":
            out[name] = _apply_sub(value, new)
        # "d": dropped; "i": moved to the end below
    for name, new in appended:
        if name not in placed:
            out[name] = new
    return out


def _is_array_diff(diff: dict) -> bool:
    if not diff:
        raise MongoError(4770500, "Expected diff to be non-empty")
    return next(iter(diff)) == "a"


def _apply_sub(value: Any, diff: dict) -> Any:
    if _is_array_diff(diff):
        return _apply_array(value, diff) if isinstance(value, list) else None
    return apply_diff(value, diff) if isinstance(value, dict) else None


def _read_array_diff(diff: dict) -> tuple[int | None, list[tuple[int, str, Any]]]:
    items = iter(diff.items())
    header, flag = next(items)
    if header != "a":
        raise MongoError(4770504, f"Expected first field to be array header a but found {header}")
    if not isinstance(flag, bool):
        raise MongoError(4770519, f"Expected array header to be bool but got a: {flag!r}")
    if flag is not True:
        raise MongoError(4770520, "Expected array header to be value true but got a: false")
    size = None
    mods: list[tuple[int, str, Any]] = []
    for key, value in items:
        if key == "l" and size is None and not mods:
            if not isinstance(value, int) or isinstance(value, bool):
                raise _section_error("l", "int")
            size = value
            continue
        if len(key) < 2:
            raise MongoError(4770521, f"expected field name to be at least two characters long, but found: {key}")
        digits = key[1:]
        if not digits.isdigit():
            raise MongoError(4770512, f"Expected integer but got {digits}")
        if key[0] == "u":
            mods.append((int(digits), "u", value))
        elif key[0] == "s":
            if not isinstance(value, dict):
                raise MongoError(4770501, f"expected sub diff at index {int(digits)} but got {key}: {value!r}")
            mods.append((int(digits), "s", value))
        else:
            raise MongoError(4770502, f"Expected either 'u' (update) or 's' (sub diff) at index {int(digits)} "
                                      f"but got {key}: {value!r}")
    return size, mods


def _apply_array(values: list, diff: dict) -> list:
    size, mods = _read_array_diff(diff)
    by_index = {index: (kind, value) for index, kind, value in mods}
    last = max(by_index, default=-1)
    length = size if size is not None else max(len(values), last + 1)
    out = []
    for index in range(length):
        present = index < len(values)
        mod = by_index.get(index)
        if mod is None:
            out.append(values[index] if present else None)
        elif mod[0] == "u":
            out.append(mod[1])
        else:
            out.append(_apply_sub(values[index], mod[1]) if present else None)
    return out

