"""The update operators, each applied to one concrete path of a (private, already copied) document.

Every function takes ``(doc, parts, arg, ctx)`` where ``parts`` is a concrete path (no $ forms)
and returns True when the document changed. Numeric results follow mongod's SafeNum rules:
int32 op int32 stays int32 unless it overflows (then int64); int64 overflow is an error (2);
any double makes a double; any Decimal128 makes a Decimal128.
"""

from __future__ import annotations

import datetime as _dt
import decimal
from collections.abc import Mapping
from typing import Any

from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.timestamp import Timestamp

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.match import compile_filter, compile_value_predicate, is_operator_document
from tidemark.query.match_regex import is_regex
from tidemark.query.paths import PathNotViable, get_path, is_numeric_component, set_path, unset_path
from tidemark.query.sort import make_sort_key
from tidemark.query.update_parse import PULL_FILTER_LEVEL_OPS, as_long
from tidemark.query.value_repr import bson_repr, id_element, id_repr
from tidemark.query.values import MISSING as _MISSING
from tidemark.query.values import bson_type_name, compare, equal, is_number, sort_key

__all__ = ["OPS", "identical", "deep_copy", "UpdateContext"]

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_DEC_CTX = decimal.Context(prec=34)


class UpdateContext:
    """Per-application facts operators need: the original document, upsert flag, the clock, and
    the command's collation (``collation.Collation`` or None) for $min/$max/$addToSet/$pull/$pullAll
    and $push's $sort."""

    __slots__ = ("original", "is_upsert", "now", "collation")

    def __init__(self, original: dict, is_upsert: bool, now: _dt.datetime, collation: Any = None):
        self.original = original
        self.is_upsert = is_upsert
        self.now = now
        self.collation = collation


def deep_copy(v: Any) -> Any:
    """Copy documents and arrays (other BSON values are immutable)."""
    t = type(v)
    if t is dict:
        return {k: deep_copy(x) for k, x in v.items()}
    if t is list:
        return [deep_copy(x) for x in v]
    if isinstance(v, Mapping):
        return {k: deep_copy(x) for k, x in v.items()}
    return v


def identical(a: Any, b: Any) -> bool:
    """Same BSON bytes: same types (1 and 1.0 differ), same field order, same values."""
    ta, tb = type(a), type(b)
    if ta is not tb:
        if isinstance(a, int) and isinstance(b, int) and not isinstance(a, bool) and not isinstance(b, bool):
            return _int_kind(a) == _int_kind(b) and a == b
        return False
    if ta is dict:
        return len(a) == len(b) and all(
            ka == kb and identical(a[ka], b[kb]) for ka, kb in zip(a, b, strict=False)
        )
    if ta is list:
        return len(a) == len(b) and all(identical(x, y) for x, y in zip(a, b, strict=False))
    if ta is float:
        return a == b or (a != a and b != b)
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - values without a usable == are simply not identical
        return False


def _int_kind(v: int) -> int:
    if isinstance(v, Int64) or not _INT32_MIN <= v <= _INT32_MAX:
        return 1
    return 0


def _kind(v: Any) -> int:
    """0 int32, 1 int64, 2 double, 3 decimal."""
    if isinstance(v, Decimal128):
        return 3
    if isinstance(v, float):
        return 2
    return _int_kind(v)


def _to_dec(v: Any) -> decimal.Decimal:
    return v.to_decimal() if isinstance(v, Decimal128) else decimal.Decimal(v)


def arith(op: str, a: Any, b: Any) -> Any:
    """``a + b`` or ``a * b`` with mongod's SafeNum promotion; None when an integer result leaves
    the int64 range (SafeNum's invalid result: int32 overflow widens to int64, int64 overflow fails)."""
    kind = max(_kind(a), _kind(b))
    if kind == 3:
        x, y = _to_dec(a), _to_dec(b)
        return Decimal128(_DEC_CTX.add(x, y) if op == "+" else _DEC_CTX.multiply(x, y))
    if kind == 2:
        return float(a) + float(b) if op == "+" else float(a) * float(b)
    r = int(a) + int(b) if op == "+" else int(a) * int(b)
    if kind == 0 and _INT32_MIN <= r <= _INT32_MAX:
        return r
    if _INT64_MIN <= r <= _INT64_MAX:
        return Int64(r)
    return None


def _safe_num_repr(v: Any) -> str:
    """SafeNum's debug rendering of the current value in mongod's overflow message."""
    if isinstance(v, Decimal128):
        return f"(NumberDecimal){v}"
    if isinstance(v, float):
        return f"(NumberDouble){v!r}"
    return f"(NumberLong){int(v)}" if _int_kind(v) else f"(NumberInt){int(v)}"


def _path_str(parts: tuple[str, ...]) -> str:
    return ".".join(parts)


_MAX_PADDING = 1_500_000  # mongod's kMaxPaddingAllowed: nulls an update may add before an array index
_CANNOT_BACKFILL_ARRAY = 34  # CannotBackfillArray (not in the shared ErrorCode table)


def _check_padding(doc: dict, parts: tuple[str, ...]) -> None:
    """An index past an array's end pads it with nulls; more than 1,500,000 of them is 34 (checked
    before writing, so a huge index never allocates)."""
    node: Any = doc
    for part in parts:
        if isinstance(node, dict):
            node = node.get(part, _MISSING)
        elif isinstance(node, list) and is_numeric_component(part):
            idx = int(part)
            if idx - len(node) > _MAX_PADDING:
                raise MongoError(_CANNOT_BACKFILL_ARRAY, f"can't backfill more than {_MAX_PADDING} elements")
            node = node[idx] if idx < len(node) else _MISSING
        else:
            return


def _set(doc: dict, parts: tuple[str, ...], value: Any) -> None:
    if any(p.isdigit() for p in parts):
        _check_padding(doc, parts)
    try:
        set_path(doc, parts, value)
    except PathNotViable as exc:
        raise MongoError(ErrorCode.PathNotViable, exc.message) from None


def op_set(doc: dict, parts: tuple, arg: Any, ctx: UpdateContext) -> bool:
    cur = get_path(doc, parts)
    if identical(cur, arg):
        return False
    _set(doc, parts, deep_copy(arg))
    return True


def op_set_on_insert(doc: dict, parts: tuple, arg: Any, ctx: UpdateContext) -> bool:
    return op_set(doc, parts, arg, ctx) if ctx.is_upsert else False


def op_unset(doc: dict, parts: tuple, arg: Any, ctx: UpdateContext) -> bool:
    return unset_path(doc, parts)


def _numeric(op_name: str, verb: str, doc: dict, parts: tuple, arg: Any, ctx: UpdateContext) -> bool:
    cur = get_path(doc, parts)
    if cur is not _MISSING and not is_number(cur):
        raise MongoError(
            ErrorCode.TypeMismatch,
            f"Cannot apply {op_name} to a value of non-numeric type. {id_repr(doc)} has the field "
            f"'{parts[-1]}' of non-numeric type {bson_type_name(cur)}",
        )
    if cur is _MISSING:
        new = arg if op_name == "$inc" else arith("*", _zero_like(arg), 0)
    else:
        new = arith(verb, cur, arg)
        if new is None:
            raise MongoError(
                ErrorCode.BadValue,
                f"Failed to apply {op_name} operations to current value ({_safe_num_repr(cur)}) for document "
                f"{id_repr(doc)}",
            )
    if identical(cur, new):
        return False
    _set(doc, parts, new)
    return True


def _zero_like(v: Any) -> Any:
    k = _kind(v)
    return [0, Int64(0), 0.0, Decimal128("0")][k]


def op_inc(doc: dict, parts: tuple, arg: Any, ctx: UpdateContext) -> bool:
    return _numeric("$inc", "+", doc, parts, arg, ctx)


def op_mul(doc: dict, parts: tuple, arg: Any, ctx: UpdateContext) -> bool:
    return _numeric("$mul", "*", doc, parts, arg, ctx)


def _minmax(sign: int, doc: dict, parts: tuple, arg: Any, ctx: UpdateContext) -> bool:
    cur = get_path(doc, parts)
    cmp = compare if ctx.collation is None else ctx.collation.compare
    if cur is not _MISSING and cmp(arg, cur) * sign <= 0:
        return False
    _set(doc, parts, deep_copy(arg))
    return True


def op_min(doc: dict, parts: tuple, arg: Any, ctx: UpdateContext) -> bool:
    return _minmax(-1, doc, parts, arg, ctx)


def op_max(doc: dict, parts: tuple, arg: Any, ctx: UpdateContext) -> bool:
    return _minmax(1, doc, parts, arg, ctx)


def op_current_date(doc: dict, parts: tuple, arg: Any, ctx: UpdateContext) -> bool:
    now = ctx.now
    if isinstance(arg, Mapping) and arg.get("$type") == "timestamp":
        value: Any = Timestamp(int(now.replace(tzinfo=_dt.UTC).timestamp()), 1)
    else:
        value = now.replace(microsecond=now.microsecond // 1000 * 1000)
    _set(doc, parts, value)
    return True


def _check_viable(doc: dict, parts: tuple, *, rename_source: bool = False) -> None:
    """mongod's walk of a path that may not exist (checkViability for $pop/$pull/$pullAll,
    findLongestPrefix for a $rename source): a missing path is a no-op only if it *could* be created,
    so the walk must stop at a document, or at an array whose next component is an index; a scalar,
    or an array met with a field name, is 28 PathNotViable (for a rename source before its
    source-array check, 2). The two callers differ only in mongod's message."""
    node: Any = doc
    name = ""  # the field name of ``node`` (an array element's is its index, as mongod's)
    for i, part in enumerate(parts):
        if isinstance(node, dict):
            if part not in node:
                return
            node, name = node[part], part
        elif isinstance(node, list) and is_numeric_component(part):
            if int(part) >= len(node):
                return
            node, name = node[int(part)], str(int(part))
        else:
            where = f"({parts[i - 1]} of {_path_str(parts)})" if rename_source else f"({part}) of ({_path_str(parts)})"
            raise MongoError(
                ErrorCode.PathNotViable,
                f"{'cannot' if rename_source else 'Cannot'} use the part {where} to traverse the element "
                f"({{{name}: {bson_repr(node)}}})",
            )


def _array_or_error(
    doc: dict, parts: tuple, ctx: UpdateContext, message: str, code: int = ErrorCode.BadValue, *,
    create: bool = True,
):
    cur = get_path(doc, parts)
    if isinstance(cur, list):
        return cur
    if cur is _MISSING:
        if not create:
            _check_viable(doc, parts)
        return cur
    raise MongoError(
        code, message.format(field=parts[-1], path=_path_str(parts), type=bson_type_name(cur),
                             id=id_repr(doc))
    )


def op_push(doc: dict, parts: tuple, arg: Any, ctx: UpdateContext) -> bool:
    cur = _array_or_error(
        doc, parts, ctx, "The field '{path}' must be an array but is of type {type} in document {id}"
    )
    arr = [] if cur is _MISSING else list(cur)
    if isinstance(arg, Mapping) and "$each" in arg:
        # mongod's PushNode: a push is a no-op only when it inserts nothing, has no $sort and
        # trims nothing (a $sort rewrites the array even when the order stays the same).
        items = [deep_copy(x) for x in arg["$each"]]
        changed = bool(items) or "$sort" in arg
        position = arg.get("$position")
        if position is None:
            arr.extend(items)
        else:
            pos = as_long(position) or 0
            if pos < 0:
                pos = max(len(arr) + pos, 0)
            arr[pos:pos] = items
        if "$sort" in arg:
            arr = _push_sort(arr, arg["$sort"], ctx.collation)
        if "$slice" in arg:
            n = as_long(arg["$slice"]) or 0
            if len(arr) > abs(n):
                arr = arr[:n] if n >= 0 else arr[len(arr) + n :]
                changed = True
    else:
        arr.append(deep_copy(arg))
        changed = True
    if cur is not _MISSING and not changed:
        return False
    _set(doc, parts, arr)
    return True


def _push_sort(arr: list, spec: Any, collation: Any = None) -> list:
    if isinstance(spec, Mapping):
        key = make_sort_key(spec, collation)
        return sorted(arr, key=lambda e: key(e if isinstance(e, dict) else {}))
    return sorted(arr, key=sort_key if collation is None else collation.sort_key, reverse=float(str(spec)) < 0)


def op_add_to_set(doc: dict, parts: tuple, arg: Any, ctx: UpdateContext) -> bool:
    cur = _array_or_error(
        doc,
        parts,
        ctx,
        "Cannot apply $addToSet to non-array field. Field named '{field}' has non-array type {type}",
    )
    arr = [] if cur is _MISSING else list(cur)
    items = arg["$each"] if isinstance(arg, Mapping) and "$each" in arg else [arg]
    key = sort_key if ctx.collation is None else ctx.collation.sort_key
    present = {key(x) for x in arr}
    changed = cur is _MISSING
    for item in items:
        k = key(item)
        if k not in present:
            present.add(k)
            arr.append(deep_copy(item))
            changed = True
    if changed:
        _set(doc, parts, arr)
    return changed


def op_pop(doc: dict, parts: tuple, arg: Any, ctx: UpdateContext) -> bool:
    cur = _array_or_error(
        doc,
        parts,
        ctx,
        "Path '{path}' contains an element of non-array type '{type}'",  # mongod: the whole path
        ErrorCode.TypeMismatch,
        create=False,
    )
    if cur is _MISSING or not cur:
        return False
    arr = cur[1:] if float(str(arg)) < 0 else cur[:-1]
    _set(doc, parts, arr)
    return True


def _pull_matcher(cond: Any, collation: Any = None):
    if isinstance(cond, Mapping) and cond:
        if is_operator_document(cond) and next(iter(cond)) not in PULL_FILTER_LEVEL_OPS:
            return compile_value_predicate(cond, collation)  # each element as one value (no array expansion)
        pred = compile_filter(cond, collation=collation)
        return lambda e: isinstance(e, dict) and pred(e)
    if is_regex(cond):
        pred = compile_filter({"v": cond})
        return lambda e: type(e) is str and pred({"v": e})
    if collation is not None:
        return lambda e: collation.equal(e, cond)
    return lambda e: equal(e, cond)


def op_pull(doc: dict, parts: tuple, arg: Any, ctx: UpdateContext) -> bool:
    cur = get_path(doc, parts)
    if cur is _MISSING:
        _check_viable(doc, parts)
        return False
    if not isinstance(cur, list):
        raise MongoError(ErrorCode.BadValue, "Cannot apply $pull to a non-array value")
    matches = _pull_matcher(arg, ctx.collation)
    kept = [e for e in cur if not matches(e)]
    if len(kept) == len(cur):
        return False
    _set(doc, parts, kept)
    return True


def op_pull_all(doc: dict, parts: tuple, arg: Any, ctx: UpdateContext) -> bool:
    cur = get_path(doc, parts)
    if cur is _MISSING:
        _check_viable(doc, parts)
        return False
    if not isinstance(cur, list):
        raise MongoError(
            ErrorCode.BadValue, "Cannot apply $pull to a non-array value"
        )  # mongod says $pull for both
    key = sort_key if ctx.collation is None else ctx.collation.sort_key
    drop = {key(x) for x in arg}
    kept = [e for e in cur if key(e) not in drop]
    if len(kept) == len(cur):
        return False
    _set(doc, parts, kept)
    return True


def op_bit(doc: dict, parts: tuple, arg: Any, ctx: UpdateContext) -> bool:
    cur = get_path(doc, parts)
    if cur is _MISSING:
        cur = 0
    elif not (isinstance(cur, int) and not isinstance(cur, bool)):
        raise MongoError(
            ErrorCode.BadValue,
            f"Cannot apply $bit to a value of non-integral type.{_id_element(ctx.original)} has the field "
            f"{parts[-1]} of non-integer type {bson_type_name(cur)}",
        )
    value = int(cur)
    long_result = _int_kind(cur) == 1
    for how, mask in arg.items():
        long_result = long_result or _int_kind(mask) == 1
        if how == "and":
            value &= int(mask)
        elif how == "or":
            value |= int(mask)
        else:
            value ^= int(mask)
    new: Any = Int64(value) if long_result else value
    if identical(get_path(doc, parts), new):
        return False
    _set(doc, parts, new)
    return True


def _id_element(doc: dict) -> str:
    """The ``_id`` element as mongod's ``Element::toString`` renders it (no braces), as $bit shows it."""
    return f"_id: {bson_repr(doc['_id'])}" if "_id" in doc else ""


def op_rename(doc: dict, parts: tuple, arg: Any, ctx: UpdateContext) -> bool:
    target = tuple(arg.split("."))
    _check_viable(doc, parts, rename_source=True)
    value = get_path(doc, parts)
    if value is _MISSING:  # a missing source is a no-op, even one under an array element
        return False
    _no_array_on(doc, parts, "source", ctx)
    _no_array_on(doc, target, "destination", ctx)
    unset_path(doc, parts)
    _set(doc, target, value)
    return True


def _no_array_on(doc: dict, parts: tuple, which: str, ctx: UpdateContext) -> None:
    node: Any = doc
    for i, part in enumerate(parts[:-1]):
        if not isinstance(node, dict) or part not in node:
            return
        node = node[part]
        if isinstance(node, list):
            raise MongoError(
                ErrorCode.BadValue,
                f"The {which} field cannot be an array element, '{_path_str(parts)}' in doc with "
                f"{id_element(doc)} has an array field called '{parts[i]}'",
            )


OPS = {
    "$set": op_set,
    "$setOnInsert": op_set_on_insert,
    "$unset": op_unset,
    "$inc": op_inc,
    "$mul": op_mul,
    "$min": op_min,
    "$max": op_max,
    "$currentDate": op_current_date,
    "$push": op_push,
    "$addToSet": op_add_to_set,
    "$pop": op_pop,
    "$pull": op_pull,
    "$pullAll": op_pull_all,
    "$bit": op_bit,
    "$rename": op_rename,
}
