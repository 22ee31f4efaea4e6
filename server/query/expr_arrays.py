"""Array expressions: $arrayElemAt $first $last $concatArrays $filter $map $reduce $size $slice $in
$indexOfArray $isArray $range $reverseArray $zip $sortArray $firstN $lastN $maxN $minN
$allElementsTrue $anyElementTrue (set operators live in ``expr_sets``).

$filter/$map/$reduce bind their variables ("this", "value" or the ``as`` name) in a fresh variables
dict per evaluation; the element loop reuses it (closures never keep a reference to it). ``as:
"CURRENT"`` rebinds the document field paths read, as a ``$let`` of CURRENT does. Their element loops
tick the interruption check (maxTimeMS, killOp) per element.

Operators with named arguments are parsed as mongod parses each (``named_args``), with its own codes
for a non-object argument, an unknown field and each missing one.
"""

from __future__ import annotations

import functools
from typing import Any, cast

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.accumulator_state import MinMaxN
from tidemark.query.expr_base import (
    args_list,
    as_float,
    check_arity,
    comparator,
    int32_arg,
    int_arg,
    named_args,
    nullish,
    num_kind,
    require_object,
    stream_double,
    traverse,
    type_name,
    validate_variable_name,
    value_key,
)
from tidemark.query.expr_logic import truthy
from tidemark.query.interrupt import tick
from tidemark.query.memory import BUFFER_LIMIT, approx_size, check_built
from tidemark.query.value_repr import bson_repr
from tidemark.query.values import MISSING


def index_bound(v: Any, name: str, label: str) -> int:
    """A start or end index of ``$indexOf*`` (mongod's uassertIfNotIntegralAndNonNegative, its
    messages spelled as it spells them)."""
    i = int32_arg(v)
    if i is None:
        raise MongoError(40096, f"{name}requires an integral {label}, found a value of type: {type_name(v)}, "
                                f"with value: {bson_repr(v)}")
    if i < 0:
        raise MongoError(40097, f"{name} requires a nonnegative {label}, found: {bson_repr(v)}")
    return i


def compile_array_elem_at(args, cc):
    a, i = (cc(x) for x in check_arity("$arrayElemAt", args, 2))

    def elem_at(doc, vars):
        arr, idx = a(doc, vars), i(doc, vars)
        if nullish(arr) or nullish(idx):
            return None
        if type(arr) is not list:
            raise MongoError(28689, f"$arrayElemAt's first argument must be an array, but is {type_name(arr)}")
        if num_kind(idx) is None:
            raise MongoError(28690, f"$arrayElemAt's second argument must be a numeric value, but is {type_name(idx)}")
        n = int32_arg(idx)  # mongod's Value::integral(): exactly a 32-bit integer
        if n is None:
            raise MongoError(28691, f"$arrayElemAt's second argument must be representable as a 32-bit integer: "
                                    f"{stream_double(as_float(idx))}")
        if -len(arr) <= n < len(arr):
            return arr[n]
        return MISSING
    return elem_at


def _first_last(name, index):
    def compile_op(args, cc):
        (a,) = (cc(x) for x in check_arity(name, args, 1))

        def op(doc, vars):
            arr = a(doc, vars)
            if nullish(arr):
                return None
            if type(arr) is not list:
                raise MongoError(28689, f"{name}'s argument must be an array, but is {type_name(arr)}")
            return arr[index] if arr else MISSING
        return op
    return compile_op


def compile_concat_arrays(args, cc):
    fns = [cc(a) for a in args_list(args)]

    def concat(doc, vars):
        out = []
        for fn in fns:
            v = fn(doc, vars)
            if nullish(v):
                return None
            if type(v) is not list:
                raise MongoError(28664, f"$concatArrays only supports arrays, not {type_name(v)}")
            out.extend(v)
        return check_built(out)
    return concat


def _bind_name(spec: dict) -> str:
    """The ``as`` variable of $filter/$map, validated as a user variable (CURRENT allowed); a
    non-string ``as`` is read as an empty name (mongod's BSONElement::str())."""
    var = spec.get("as", "this")
    if type(var) is not str or not var:
        raise MongoError(16866, "empty variable names are not allowed")
    validate_variable_name(var, allow_current=True)
    return var


def _in_scope(var: str, doc: Any, vars: dict) -> tuple[dict, bool]:
    """The variables an element loop binds ``var`` in, and whether the element becomes CURRENT."""
    scope = dict(vars)
    if var == "CURRENT":
        scope.setdefault("ROOT", doc)  # $$ROOT stays the document once CURRENT moves
        return scope, True
    return scope, False


def compile_filter(args, cc):
    spec = named_args(args, ("input", "as", "cond", "limit"), (28646, "$filter only supports an object as its argument"),
                      (28647, "Unrecognized parameter to $filter: {}"),
                      (("input", 28648, "Missing 'input' parameter to $filter"),
                       ("cond", 28650, "Missing 'cond' parameter to $filter")))
    inp = cc(spec["input"])  # mongod's order: input, the name, cond, limit
    var = _bind_name(spec)
    cond = cc(spec["cond"])
    limit = cc(spec["limit"]) if "limit" in spec else None

    def filter_(doc, vars):
        arr = inp(doc, vars)
        if nullish(arr):
            return None
        if type(arr) is not list:
            raise MongoError(28651, f"input to $filter must be an array not {type_name(arr)}")
        n = None
        if limit is not None:
            lv = limit(doc, vars)
            if not nullish(lv):
                n = int32_arg(lv)
                if n is None:
                    raise MongoError(327391, f"$filter: limit must be represented as a 32-bit integral value: "
                                             f"{bson_repr(lv)}")
                if n < 1:
                    raise MongoError(327392, f"$filter: limit must be greater than 0: {bson_repr(lv)}")
        scope, current = _in_scope(var, doc, vars)
        out = []
        for el in arr:
            tick()
            if current:
                keep = cond(el, scope)
            else:
                scope[var] = el
                keep = cond(doc, scope)
            if truthy(keep):
                out.append(el)
                if n is not None and len(out) >= n:
                    break
        return out
    return filter_


def compile_map(args, cc):
    spec = named_args(args, ("input", "as", "in"), (16878, "$map only supports an object as its argument"),
                      (16879, "Unrecognized parameter to $map: {}"),
                      (("input", 16880, "Missing 'input' parameter to $map"),
                       ("in", 16882, "Missing 'in' parameter to $map")))
    inp = cc(spec["input"])  # mongod's order: input, the name, in
    var = _bind_name(spec)
    body = cc(spec["in"])

    def map_(doc, vars):
        arr = inp(doc, vars)
        if nullish(arr):
            return None
        if type(arr) is not list:
            raise MongoError(16883, f"input to $map must be an array not {type_name(arr)}")
        scope, current = _in_scope(var, doc, vars)
        out = []
        size = 0
        for el in arr:
            tick()
            if current:
                v = body(el, scope)
            else:
                scope[var] = el
                v = body(doc, scope)
            out.append(None if v is MISSING else v)
            size += approx_size(v, BUFFER_LIMIT)
            if size > BUFFER_LIMIT:
                check_built(out, size)
        return out
    return map_


def compile_reduce(args, cc):
    spec = named_args(args, ("input", "initialValue", "in"), (40075, "$reduce requires an object as an argument, found: {}"),
                      (40076, "$reduce found an unknown argument: {}"),
                      (("input", 40077, "$reduce requires 'input' to be specified"),
                       ("initialValue", 40078, "$reduce requires 'initialValue' to be specified"),
                       ("in", 40079, "$reduce requires 'in' to be specified")))
    inp, init, body = cc(spec["input"]), cc(spec["initialValue"]), cc(spec["in"])

    def reduce_(doc, vars):
        arr = inp(doc, vars)
        if nullish(arr):
            return None
        if type(arr) is not list:
            raise MongoError(40080, f"$reduce requires that 'input' be an array, found: {bson_repr(arr)}")
        scope = dict(vars)
        acc = init(doc, vars)
        for el in arr:
            tick()
            scope["value"] = acc
            scope["this"] = el
            acc = body(doc, scope)
        return acc
    return reduce_


def compile_size(args, cc):
    (a,) = (cc(x) for x in check_arity("$size", args, 1))

    def size(doc, vars):
        v = a(doc, vars)
        if type(v) is not list:
            raise MongoError(17124, f"The argument to $size must be an array. Type of given argument: {type_name(v)}")
        return len(v)
    return size


def compile_slice(args, cc):
    lst = args_list(args)
    if not 2 <= len(lst) <= 3:
        raise MongoError(28667, f"Expression $slice takes at least 2 arguments, and at most 3, but {len(lst)} were passed in.")
    arr_fn, pos_fn = cc(lst[0]), cc(lst[1])
    count_fn = cc(lst[2]) if len(lst) == 3 else None

    def slice_(doc, vars):
        # mongod's order: the array and the position (nullish, then checked), and only then the count
        arr, pos = arr_fn(doc, vars), pos_fn(doc, vars)
        if nullish(arr) or nullish(pos):
            return None
        if type(arr) is not list:
            raise MongoError(28724, f"First argument to $slice must be an array, but is of type: {type_name(arr)}")
        if num_kind(pos) is None:
            raise MongoError(28725, f"Second argument to $slice must be a numeric value, but is of type: {type_name(pos)}")
        a = int32_arg(pos)
        if a is None:
            raise MongoError(28726, "Second argument to $slice can't be represented as a 32-bit integer: "
                                    f"{stream_double(as_float(pos))}")
        if count_fn is None:
            return arr[a:] if a < 0 else arr[:a]
        start = max(len(arr) + a, 0) if a < 0 else min(a, len(arr))
        count = count_fn(doc, vars)
        if nullish(count):
            return None
        if num_kind(count) is None:
            raise MongoError(28727, f"Third argument to $slice must be numeric, but is of type: {type_name(count)}")
        n = int32_arg(count)
        if n is None:
            raise MongoError(28728, "Third argument to $slice can't be represented as a 32-bit integer: "
                                    f"{stream_double(as_float(count))}")
        if n <= 0:
            raise MongoError(28729, f"Third argument to $slice must be positive: {n}")
        return arr[start:start + n]
    return slice_


def compile_in(args, cc):
    a, b = (cc(x) for x in check_arity("$in", args, 2))
    agg_compare = comparator(cc)

    def in_(doc, vars):
        v, arr = a(doc, vars), b(doc, vars)
        if type(arr) is not list:
            raise MongoError(40081, f"$in requires an array as a second argument, found: {type_name(arr)}")
        return any(agg_compare(v, el) == 0 for el in arr)
    return in_


def compile_index_of_array(args, cc):
    lst = args_list(args)
    if not 2 <= len(lst) <= 4:
        raise MongoError(28667, f"Expression $indexOfArray takes at least 2 arguments, and at most 4, but {len(lst)} were passed in.")
    arr_fn, target_fn = cc(lst[0]), cc(lst[1])
    start_fn = cc(lst[2]) if len(lst) > 2 else None
    end_fn = cc(lst[3]) if len(lst) > 3 else None
    agg_compare = comparator(cc)

    def index_of(doc, vars):
        arr = arr_fn(doc, vars)
        if nullish(arr):
            return None
        if type(arr) is not list:
            raise MongoError(40090, f"$indexOfArray requires an array as a first argument, found: {type_name(arr)}")
        # mongod's order: the array, the start and end indexes, then the value searched for
        start = index_bound(start_fn(doc, vars), "$indexOfArray", "starting index") if start_fn else 0
        end = index_bound(end_fn(doc, vars), "$indexOfArray", "ending index") if end_fn else len(arr)
        target = target_fn(doc, vars)
        for i in range(start, min(end, len(arr))):
            if agg_compare(arr[i], target) == 0:
                return i
        return -1
    return index_of


def compile_is_array(args, cc):
    (a,) = (cc(x) for x in check_arity("$isArray", args, 1))
    return lambda doc, vars: type(a(doc, vars)) is list


_RANGE_MEMORY_LIMIT = 100 * 1024 * 1024
_RANGE_BYTES_PER_ELEMENT = 16  # mongod charges each int element of a $range result this much
_RANGE_CHUNK = 4096  # elements built between two interruption ticks (~50 us)


def compile_range(args, cc):
    lst = args_list(args)
    if not 2 <= len(lst) <= 3:
        raise MongoError(28667, f"Expression $range takes at least 2 arguments, and at most 3, but {len(lst)} were passed in.")
    fns = [cc(x) for x in lst]

    def range_(doc, vars):
        vals = [f(doc, vars) for f in fns]
        labels = ("starting value", "ending value", "step value")
        ints = []
        for label, v, code in zip(labels, vals, (34443, 34445, 34447), strict=False):
            if num_kind(v) is None:
                raise MongoError(code, f"$range requires a numeric {label}, found value of type: {type_name(v)}")
            i = int_arg(v)
            if i is None or not -(2**31) <= i < 2**31:
                raise MongoError(code + 1, f"$range requires a {label} that can be represented as a 32-bit integer, found value: {stream_double(v) if type(v) is float else v}")
            ints.append(i)
        step = ints[2] if len(ints) == 3 else 1
        if step == 0:
            raise MongoError(34449, "$range requires a non-zero step value")
        values = range(ints[0], ints[1], step)
        if len(values) * _RANGE_BYTES_PER_ELEMENT > _RANGE_MEMORY_LIMIT:
            raise MongoError(ErrorCode.ExceededMemoryLimit,
                             f"$range would use too much memory ({len(values) * _RANGE_BYTES_PER_ELEMENT} bytes) and "
                             f"cannot spill to disk. Memory limit: {_RANGE_MEMORY_LIMIT} bytes")
        if len(values) <= _RANGE_CHUNK:
            return list(values)
        out: list[int] = []
        for start in range(0, len(values), _RANGE_CHUNK):  # up to 6.5M elements: interruptible
            tick(_RANGE_CHUNK)
            out.extend(values[start:start + _RANGE_CHUNK])
        return out
    return range_


def compile_reverse(args, cc):
    (a,) = (cc(x) for x in check_arity("$reverseArray", args, 1))

    def reverse(doc, vars):
        v = a(doc, vars)
        if nullish(v):
            return None
        if type(v) is not list:
            raise MongoError(34435, f"The argument to $reverseArray must be an array, but was of type: {type_name(v)}")
        return v[::-1]
    return reverse


def compile_zip(args, cc):
    spec = named_args(args, ("inputs", "useLongestLength", "defaults"),
                      (34460, "$zip only supports an object as an argument, found {}"),
                      (34464, "$zip found an unknown argument: {}"))
    for field, value in spec.items():  # each checked where mongod's parse meets it
        if field == "inputs" and type(value) is not list:
            raise MongoError(34461, f"inputs must be an array of expressions, found {type_name(value)}")
        if field == "defaults" and type(value) is not list:
            raise MongoError(34462, f"defaults must be an array of expressions, found {type_name(value)}")
        if field == "useLongestLength" and type(value) is not bool:
            # (mongod's message names the type of $zip's own argument: always an object)
            raise MongoError(34463, "useLongestLength must be a bool, found object")
    inputs = [cc(x) for x in spec.get("inputs", [])]
    longest = spec.get("useLongestLength", False)
    defaults = [cc(x) for x in spec.get("defaults", [])]
    if not inputs:
        raise MongoError(34465, "$zip requires at least one input array")
    if defaults and not longest:
        raise MongoError(34466, "cannot specify defaults unless useLongestLength is true")
    if defaults and len(defaults) != len(inputs):
        raise MongoError(34467, "defaults and inputs must have the same length")

    def zip_(doc, vars):
        arrays = []
        for f in inputs:
            v = f(doc, vars)
            if nullish(v):
                return None
            if type(v) is not list:
                raise MongoError(34468, f"$zip found a non-array expression in input: {bson_repr(v)}")
            arrays.append(v)
        fill = [f(doc, vars) for f in defaults] if defaults else [None] * len(arrays)
        n = max(map(len, arrays)) if longest else min(map(len, arrays))
        return [[a[i] if i < len(a) else fill[j] for j, a in enumerate(arrays)] for i in range(n)]
    return zip_


def sort_spec_comparator(sort_by, cc=None):
    """A cmp function for $sortArray / $topN sortBy: 1/-1 (whole values) or {path: 1|-1, ...};
    strings compare under the collation of the compiler ``cc``."""
    agg_compare = comparator(cc)
    sort_key = value_key(cc)
    if num_kind(sort_by) is not None and int_arg(sort_by) in (1, -1):
        d = cast(int, int_arg(sort_by))  # 1 or -1 (checked above)
        return lambda x, y: d * agg_compare(x, y)
    if not isinstance(sort_by, dict) or not sort_by:
        raise MongoError(2942501, "$sortArray requires sortBy to be either 1, -1, or an object")
    keys: list[tuple[list[str], int]] = []
    for path, d in sort_by.items():
        if int_arg(d) not in (1, -1):
            raise MongoError(15975, "$sort key ordering must be 1 (for ascending) or -1 (for descending)")
        keys.append((path.split("."), cast(int, int_arg(d))))  # 1 or -1 (checked above)

    def cmp(x, y):
        for parts, d in keys:
            vx = traverse(x, parts) if type(x) is dict else MISSING
            vy = traverse(y, parts) if type(y) is dict else MISSING
            c = agg_compare(_sort_value(vx, d, sort_key), _sort_value(vy, d, sort_key))
            if c:
                return d * c
        return 0
    return cmp


def _sort_value(v, direction, sort_key):
    """Arrays sort by their smallest (ascending) or largest (descending) element, like $sort."""
    if type(v) is list and v:
        return (min if direction == 1 else max)(v, key=sort_key)
    return None if v is MISSING else v


def compile_sort_array(args, cc):
    spec = named_args(args, ("input", "sortBy"), (2942500, "$sortArray requires an object as an argument, found: {}"),
                      (2942501, "$sortArray found an unknown argument: {}"),
                      (("input", 2942502, "$sortArray requires 'input' to be specified"),
                       ("sortBy", 2942503, "$sortArray requires 'sortBy' to be specified")))
    inp = cc(spec["input"])
    key = functools.cmp_to_key(sort_spec_comparator(spec["sortBy"], cc))

    def sort_array(doc, vars):
        v = inp(doc, vars)
        if nullish(v):
            return None
        if type(v) is not list:
            raise MongoError(2942504, f"The input argument to $sortArray must be an array, but was of type: {type_name(v)}")
        return sorted(v, key=key)
    return sort_array


def _n_op(name):
    def compile_op(args, cc):
        spec = require_object(name, args, {"n", "input"}, ("n", "input"))
        nf, inp = cc(spec["n"]), cc(spec["input"])
        sort_key = value_key(cc)

        def op(doc, vars):
            n, arr = nf(doc, vars), inp(doc, vars)
            k = int_arg(n)
            if k is None or k < 1:
                raise MongoError(5787908, f"'n' must be greater than 0, found: {n}")
            if type(arr) is not list:
                raise MongoError(5788200, f"Input to {name} must be an array, found: {type_name(arr)}")
            if name == "$firstN":
                return arr[:k]
            if name == "$lastN":
                return arr[-k:]
            # (mongod's ExpressionFromAccumulatorN: the $group accumulator fed the array's elements)
            acc = MinMaxN(k, name == "$maxN", sort_key)
            acc.process_many(arr)
            return acc.result()
        return op
    return compile_op


def _all_any(name, want_all):
    def compile_op(args, cc):
        (a,) = (cc(x) for x in check_arity(name, args, 1))

        def op(doc, vars):
            v = a(doc, vars)
            if type(v) is not list:
                raise MongoError(17040 if want_all else 17041, f"{name}'s argument must be an array, but is {type_name(v)}")
            return all(truthy(x) for x in v) if want_all else any(truthy(x) for x in v)
        return op
    return compile_op


OPERATORS = {
    "$arrayElemAt": compile_array_elem_at,
    "$first": _first_last("$first", 0),
    "$last": _first_last("$last", -1),
    "$concatArrays": compile_concat_arrays,
    "$filter": compile_filter,
    "$map": compile_map,
    "$reduce": compile_reduce,
    "$size": compile_size,
    "$slice": compile_slice,
    "$in": compile_in,
    "$indexOfArray": compile_index_of_array,
    "$isArray": compile_is_array,
    "$range": compile_range,
    "$reverseArray": compile_reverse,
    "$zip": compile_zip,
    "$sortArray": compile_sort_array,
    "$firstN": _n_op("$firstN"),
    "$lastN": _n_op("$lastN"),
    "$maxN": _n_op("$maxN"),
    "$minN": _n_op("$minN"),
    "$allElementsTrue": _all_any("$allElementsTrue", True),
    "$anyElementTrue": _all_any("$anyElementTrue", False),
}
