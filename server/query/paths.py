"""Dotted paths through documents and arrays, with "missing" distinct from null.

Two lookups, two semantics:

- ``get_path_values(doc, path)`` is the *matching* traversal (mongod's ElementIterator): at a
  non-leaf step an array is traversed implicitly — every element that is a document continues the
  path; scalars and nested arrays inside it contribute nothing; a numeric component additionally
  selects the array element at that position (a document element also continues the path with the
  number as a field name, ``MISSING`` when it lacks it). A document lacking the next field contributes
  ``MISSING``; a scalar met before the end of the path contributes ``MISSING``. Leaf values are
  returned as they are (a leaf array is NOT expanded unless ``expand_arrays=True``; the match
  layer checks both the array and its elements — except for an array reached through an array
  position, which mongod yields whole: ``positional=True`` marks those).

  Examples (path "a.b"): {a: {b: 1}} -> [1]; {a: [{b: 1}, {b: [2, 3]}]} -> [1, [2, 3]];
  {a: [{}, 5]} -> [MISSING]; {a: []} -> []; {a: 5} -> [MISSING]; {} -> [MISSING].
  A path whose only remaining component at an array is empty ends there, as in mongod (which
  carries the rest of the path as one dotted string): "a." on {a: [3]} -> [[3]], on
  {a: [{"": 3}]} -> [[{"": 3}]]; "a.." on {a: [{"": [3]}]} -> [[3]].

- ``get_path(doc, path)`` is a plain lookup (used by expressions, projection, update): documents
  by name, arrays only by numeric position; anything else yields ``default``.

``set_path`` / ``unset_path`` mutate a document in place (callers copy first) with update
semantics; they raise ``PathError`` subclasses that ``update`` turns into mongod's errors.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from tidemark.query.values import MISSING, bson_type_name

__all__ = [
    "MISSING",
    "split_path",
    "is_numeric_component",
    "get_path_values",
    "get_path",
    "set_path",
    "unset_path",
    "PathError",
    "PathNotViable",
    "PositionalLeaf",
]


@lru_cache(maxsize=4096)
def split_path(path: str) -> tuple[str, ...]:
    """``"a.b.0"`` -> ``("a", "b", "0")`` (cached; callers must not rely on identity)."""
    return tuple(path.split("."))


@lru_cache(maxsize=4096)
def is_numeric_component(part: str) -> bool:
    """True when ``part`` names an array position the way mongod reads it (ASCII digits only)."""
    return part.isascii() and part.isdigit()


class PositionalLeaf:
    """An array the path reached at its end through an array position ("a.0" on {a: [[1]]}). mongod's
    iterator yields such an array as one value, never its elements (unlike a leaf array reached by a
    field name), so the match layer must not apply the leaf-array rule to it. Only
    ``get_path_values(..., positional=True)`` wraps values this way."""

    __slots__ = ("value",)

    def __init__(self, value: list):
        self.value = value


class _MarkingOut(list):
    """The output of a ``positional=True`` traversal (the one check sits on the positional leaf
    branch, so the other traversals pay nothing)."""


def get_path_values(doc: Any, path: str | tuple[str, ...], *, expand_arrays: bool = False,
                    sort_keys: bool = False, positional: bool = False) -> list:
    """All values the path reaches under matching semantics (see module docstring).

    With ``expand_arrays=True`` a leaf array is replaced by its elements (index-key style;
    an empty leaf array then contributes nothing). ``sort_keys=True``: at a numeric component, a
    document element of the array continues the path only when it has that field (sort keys come
    from the index key generator, which never reads a missing numeric field as null).
    ``positional=True``: an array reached at the end of the path through an array position comes
    as a :class:`PositionalLeaf` (for the match layer's leaf-array rule).
    """
    parts = split_path(path) if isinstance(path, str) else path
    out: list = _MarkingOut() if positional else []
    _collect(doc, parts, 0, out, not sort_keys)
    if expand_arrays:
        expanded: list = []
        for v in out:
            if type(v) is list:
                expanded.extend(v)
            else:
                expanded.append(v)
        return expanded
    return out


def _collect(cur: Any, parts: tuple[str, ...], i: int, out: list, lacking: bool = True) -> None:
    # cur is a document (dict-like) here; parts[i] is the next component.
    n = len(parts)
    while True:
        if isinstance(cur, dict):
            cur = cur.get(parts[i], MISSING)
        elif hasattr(cur, "get") and hasattr(cur, "keys"):
            cur = cur.get(parts[i], MISSING)
        else:
            out.append(MISSING)
            return
        i += 1
        if i == n or cur is MISSING:
            out.append(cur)
            return
        if isinstance(cur, list):
            _collect_array(cur, parts, i, out, lacking)
            return


def _collect_array(arr: list, parts: tuple[str, ...], i: int, out: list, lacking: bool = True) -> None:
    # Non-leaf step through an array: implicit traversal, plus positional access if numeric.
    # (``lacking``: whether a document element without a numeric field contributes MISSING)
    part = parts[i]
    n = len(parts)
    if not part and i + 1 == n:
        # mongod continues through an array with the rest of the path as one dotted string: a lone
        # empty last component ("x." at an array x) is an empty rest, so the path ends at the array
        out.append(arr)
        return
    if is_numeric_component(part):
        # the element at that position continues the rest of the path; then, as in mongod's
        # BSONElementIterator, every document element continues the path from the numeric component as
        # a field name (lacking it, it contributes MISSING: {a: [{x: 1}, {y: 1}]} reaches null at "a.0.x")
        idx = int(part)
        if idx < len(arr):
            elem = arr[idx]
            if i + 1 == n:
                out.append(PositionalLeaf(elem) if type(elem) is list and type(out) is _MarkingOut else elem)
            elif isinstance(elem, list):
                _collect_array(elem, parts, i + 1, out, lacking)
            elif isinstance(elem, dict) or (hasattr(elem, "get") and hasattr(elem, "keys")):
                _collect(elem, parts, i + 1, out, lacking)
            # (a scalar there ends the path with no value, not a missing field: since 2.5 mongod's
            # {"a.0.b": null} does not match {a: [5]}, as a scalar element never continues a path)
        for elem in arr:
            if isinstance(elem, dict) and (lacking or part in elem):
                _collect(elem, parts, i, out, lacking)
        return
    for elem in arr:
        if isinstance(elem, dict):
            _collect(elem, parts, i, out, lacking)


def get_path(doc: Any, path: str | tuple[str, ...], default: Any = MISSING) -> Any:
    """Plain lookup: documents by field name, arrays by numeric position; else ``default``."""
    parts = split_path(path) if type(path) is str else path
    cur = doc
    for part in parts:
        if isinstance(cur, dict):
            if part not in cur:
                return default
            cur = cur[part]
        elif isinstance(cur, list):
            if not is_numeric_component(part):
                return default
            idx = int(part)
            if idx >= len(cur):
                return default
            cur = cur[idx]
        else:
            return default
    return cur


class PathError(Exception):
    """A path cannot be written; ``update`` maps it to mongod's code and message."""

    def __init__(self, message: str, *, prefix: str = "", element: Any = None):
        super().__init__(message)
        self.message = message
        self.prefix = prefix
        self.element = element


class PathNotViable(PathError):
    """Creating the path would need a field inside a scalar (mongod code 28)."""


def set_path(doc: dict, path: str | tuple[str, ...], value: Any) -> None:
    """Set ``path`` to ``value`` in place, creating documents for missing components.

    Numeric components index arrays (padding with null, as mongod's $set does); any other
    component through an array or a scalar raises ``PathNotViable``.
    """
    parts = split_path(path) if type(path) is str else path
    cur: Any = doc
    name = ""  # the field name of ``cur`` in its parent (an array element's is its index, as mongod's)
    last = len(parts) - 1
    for i, part in enumerate(parts):
        if isinstance(cur, dict):
            if i == last:
                cur[part] = value
                return
            nxt = cur.get(part, MISSING)
            if nxt is MISSING:
                nxt = {}
                cur[part] = nxt
            cur, name = nxt, part
        elif isinstance(cur, list):
            if not is_numeric_component(part):
                raise PathNotViable(
                    f"Cannot create field '{part}' in element {{{name}: {_short(cur)}}}",
                    prefix=".".join(parts[:i]),
                    element=cur,
                )
            idx = int(part)
            padded = idx >= len(cur)
            if padded:
                cur.extend([None] * (idx + 1 - len(cur)))
            if i == last:
                cur[idx] = value
                return
            if padded:
                cur[idx] = {}
            cur, name = cur[idx], str(idx)
        else:
            raise PathNotViable(
                f"Cannot create field '{part}' in element {{{name}: {_short(cur)}}}",
                prefix=".".join(parts[:i]),
                element=cur,
            )


def unset_path(doc: dict, path: str | tuple[str, ...]) -> bool:
    """Remove ``path`` in place; an array element becomes null (mongod). Returns True if changed."""
    parts = split_path(path) if type(path) is str else path
    cur: Any = doc
    last = len(parts) - 1
    for i, part in enumerate(parts):
        if isinstance(cur, dict):
            if part not in cur:
                return False
            if i == last:
                del cur[part]
                return True
            cur = cur[part]
        elif isinstance(cur, list):
            if not is_numeric_component(part):
                return False
            idx = int(part)
            if idx >= len(cur):
                return False
            if i == last:
                changed = cur[idx] is not None
                cur[idx] = None
                return changed
            cur = cur[idx]
        else:
            return False
    return False


def _short(v: Any) -> str:
    if type(v) is str:
        return f'"{v}"'
    if isinstance(v, list):
        return "[ " + ", ".join(_short(x) for x in v) + " ]" if v else "[]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k}: {_short(x)}" for k, x in v.items()) + " }" if v else "{}"
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    return bson_type_name(v)
