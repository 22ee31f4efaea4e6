"""Accumulators for $group, $bucket(Auto) and $setWindowFields: parse once, create state per group.

- ``parse_accumulator(name, arg_expr) -> AccumulatorSpec``: validates and compiles the argument;
  ``spec.evaluate(doc, vars)`` produces the value to feed, ``spec.new()`` a fresh accumulator
  (``accumulator_state``: ``process(value)`` / ``result()``, semantics there).
- ``make_accumulator(name, arg_expr)``, the convenience form when the caller feeds already-evaluated
  values.
- ``fold_constant(expr, variables)``: an argument that must be constant at parse time (a $percentile
  'p', a $shift 'default') folds as mongod's optimize() folds it, command variables included.

The object-taking accumulators ($minN ... $bottom, $percentile, $median) check their fields in
mongod's order and with its codes, which differ per accumulator (mongod parses them in different
places); $group and $setWindowFields share these parsers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tidemark.protocol.codec import encode
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query import docmeta, javascript
from tidemark.query.accumulator_state import (
    Accumulator,
    AddToSet,
    Avg,
    Count,
    First,
    FirstLastN,
    Last,
    MergeObjects,
    MinMax,
    MinMaxN,
    Percentile,
    Push,
    SortedN,
    StdDev,
    Sum,
    WindowAvg,
    WindowMax,
    WindowMaxN,
    WindowStdDev,
    WindowSum,
)
from tidemark.query.expr_base import as_float, check_compound_keys, int_arg, num_kind, type_name
from tidemark.query.expressions import compile_expression, evaluate, is_constant
from tidemark.query.memory import approx_size
from tidemark.query.sort import make_sort_key, parse_sort
from tidemark.query.value_repr import bson_repr
from tidemark.query.values import MISSING, compare, sort_key

__all__ = ["AccumulatorSpec", "Accumulator", "parse_accumulator", "make_accumulator", "fold_constant",
           "ACCUMULATORS", "SPEC_ONLY"]


class AccumulatorSpec:
    """A parsed accumulator: ``evaluate(doc, vars)`` gives the value to feed, ``new()`` the state.

    ``new_for(group_id)`` is set when the state depends on the group (an 'n' that reads the group
    key, as mongod's accumulator initializer does): ``$group`` calls it with each new group's ``_id``;
    ``new()`` then evaluates the 'n' against an empty key (what mongod gives a non-object ``_id``).

    ``sliding()``, when set, is the state of the function over a window whose lower bound moves where
    mongod's removable window function answers otherwise than its accumulator ($sum $avg $max $maxN $stdDev*:
    ExpressionRemovable::buildRemovable; ``accumulator_state.WindowSum`` ...)."""

    def __init__(self, name: str, evaluate: Callable[[Any, dict], Any], factory: Callable[[], Accumulator],
                 spec: Any, field: str | None = None,
                 new_for: Callable[[Any], Accumulator] | None = None,
                 sliding: Callable[[], Accumulator] | None = None):
        self.name = name
        self.evaluate = evaluate
        self.new = factory
        self.spec = spec
        # The top-level field the argument reads when it is a plain "$name" (batch fast path).
        self.field = field
        self.new_for = new_for
        self.sliding = sliding


def _unary(name: str, arg: Any) -> Any:
    if isinstance(arg, list):
        if len(arg) != 1:
            raise MongoError(40237, f"The {name} accumulator is a unary operator")
        return arg[0]
    return arg


def fold_constant(expr: Any, variables: dict | None) -> tuple[bool, Any]:
    """``(True, value)`` when ``expr`` folds to a constant at parse time, as mongod's optimize()
    folds it: no field path, only the command's own variables (``let`` and NOW, whose values are
    fixed for the whole command); ``(False, None)`` otherwise."""
    if is_constant(expr):
        return True, evaluate(expr, {})
    if variables and _reads_only(expr, variables):
        return True, evaluate(expr, {}, variables)
    return False, None


def _reads_only(expr: Any, variables: dict) -> bool:
    """``expr`` reads no field and no variable but those of ``variables`` (``is_constant`` plus
    ``$$name`` references to command variables)."""
    if type(expr) is str:
        if expr.startswith("$$"):
            name = expr[2:].split(".", 1)[0]
            if name in variables:
                return name not in ("ROOT", "CURRENT")
            if not name[:1].isupper():  # user names start in lower case; system ones are known
                raise MongoError(17276, f"Use of undefined variable: {name}")
            return False
        return not expr.startswith("$")
    if isinstance(expr, list):
        return all(_reads_only(e, variables) for e in expr)
    if isinstance(expr, dict):
        if len(expr) == 1:
            op = next(iter(expr))
            if op in ("$literal", "$const"):
                return True
            if op in ("$rand", "$let", "$map", "$filter", "$reduce"):  # random, or binding names of their own
                return False
        return all(_reads_only(v, variables) for v in expr.values())
    return True


def _validate_n(n: Any) -> int:
    """mongod's AccumulatorN::validateN: a number (5787902), integral and within a signed 64-bit
    integer (5787903: mongod coerces 'n' to a long long, which an out-of-range value does not
    survive), positive (5787908)."""
    if num_kind(n) is None:
        raise MongoError(5787902, f"Value for 'n' must be of integral type, but found {bson_repr(n)}")
    k = int_arg(n)
    if k is None or not -(1 << 63) <= k < (1 << 63):
        raise MongoError(5787903, f"Value for 'n' must be of integral type, but found {bson_repr(n)}")
    if k <= 0:
        raise MongoError(5787908, f"'n' must be greater than 0, found {k}")
    return k


def _n_factories(n_expr: Any, factory: Callable[[int], Accumulator], variables: dict | None,
                 group_key_n: bool, collation: Any) -> tuple[Callable[[], Accumulator], Callable[[Any], Accumulator] | None]:
    """``(new, new_for)`` of an accumulator taking 'n'. A constant 'n' (command variables included)
    is validated once, here. Under ``group_key_n`` ($group) any other 'n' is mongod's initializer:
    evaluated for each new group against its ``_id`` when that is an object (else against an empty
    document), and validated then. Elsewhere it is evaluated here against an empty document."""
    variables = variables or {}
    if group_key_n:
        ok, value = fold_constant(n_expr, variables)
        if not ok:
            n_fn = compile_expression(n_expr, collation=collation)

            def new_for(group_id: Any) -> Accumulator:
                key_doc = group_id if type(group_id) is dict else {}
                return factory(_validate_n(n_fn(key_doc, variables)))

            return (lambda: new_for(None)), new_for
    else:
        value = evaluate(n_expr, {}, variables)
    n = _validate_n(value)
    return (lambda: factory(n)), None


def _element(name: str, arg: Any) -> str:
    """A BSON element as mongod prints it in 'specification must be an object; found ...'."""
    return f"{name}: {bson_repr(arg)}"


def _n_values(name: str, arg: Any, factory: Callable[[int], Accumulator], collation: Any,
              variables: dict | None, group_key_n: bool) -> AccumulatorSpec:
    """$minN/$maxN/$firstN/$lastN: ``{n, input}`` (AccumulatorN::parseArgs: fields in order, unknown
    5787901, then a missing 'n' 5787906 before a missing 'input' 5787907)."""
    if not isinstance(arg, dict):
        code = 5787900 if name in ("$minN", "$maxN") else 5787801
        raise MongoError(code, f"specification must be an object; found {_element(name, arg)}")
    n_expr: Any = MISSING
    input_fn = None
    for k, v in arg.items():
        if k == "input":
            input_fn = compile_expression(v, collation=collation)
        elif k == "n":
            compile_expression(v)  # parse errors of 'n' come in field order
            n_expr = v
        else:
            raise MongoError(5787901, f"Unknown argument for 'n' operator: {k}")
    if n_expr is MISSING:
        raise MongoError(5787906, "Missing value for 'n'")
    if input_fn is None:
        raise MongoError(5787907, "Missing value for 'input'")
    new, new_for = _n_factories(n_expr, factory, variables, group_key_n, collation)
    sliding = None
    if name == "$maxN" and not group_key_n:
        key = sort_key if collation is None else collation.sort_key
        sliding = _n_factories(n_expr, lambda n: WindowMaxN(n, key), variables, False, collation)[0]
    return AccumulatorSpec(name, input_fn, new, arg, new_for=new_for, sliding=sliding)


def _sorted_n(name: str, arg: Any, collation: Any, variables: dict | None, group_key_n: bool) -> AccumulatorSpec:
    """$top/$bottom/$topN/$bottomN: ``{n?, sortBy, output}`` (mongod's accumulatorNParseArgs:
    non-object 5788001, unknown field 5788002 — 'n' too for $top/$bottom —, then missing 'n'
    5788003, 'output' 5788004, 'sortBy' 5788005)."""
    single = name in ("$top", "$bottom")
    if not isinstance(arg, dict):
        raise MongoError(5788001, f"specification must be an object; found {_element(name, arg)}")
    n_expr: Any = 1 if single else MISSING
    output: Any = MISSING
    sort_by: Any = MISSING
    for k, v in arg.items():
        if k == "n" and not single:
            compile_expression(v)
            n_expr = v
        elif k == "output":
            output = v
        elif k == "sortBy":
            if not isinstance(v, dict):  # BSONElement::Obj() on a non-object
                raise MongoError(10065, "invalid parameter: expected an object (sortBy)")
            sort_by = v
        else:
            raise MongoError(5788002, f"Unknown argument to {name} '{k}'")
    if n_expr is MISSING:
        raise MongoError(5788003, "Missing value for 'n'")
    if output is MISSING:
        raise MongoError(5788004, "Missing value for 'output'")
    if sort_by is MISSING:
        raise MongoError(5788005, "Missing value for 'sortBy'")
    if not sort_by:
        raise MongoError(5788604, f"{name} requires a sortBy object")
    bottom = name.startswith("$bottom")
    fields = parse_sort(sort_by, allow_meta=True)
    check_compound_keys(fields)
    output_fn = compile_expression(output, collation=collation)
    new, new_for = _n_factories(n_expr, lambda n: SortedN(n, single, bottom), variables, group_key_n,
                                 collation)
    if any(type(d) is str for _, d in fields):
        evaluate_pair = _meta_sorted_pair(fields, output_fn, collation)
    else:
        key_fn = make_sort_key(fields, collation)  # (SortedN keeps the tail of the order for $bottom*)

        def evaluate_pair(doc: Any, vars: dict) -> tuple:
            return key_fn(doc), output_fn(doc, vars)
    return AccumulatorSpec(name, evaluate_pair, new, arg, new_for=new_for)


def _meta_sorted_pair(fields: list, output_fn: Callable[[Any, dict], Any],
                      collation: Any) -> Callable[[Any, dict], tuple]:
    """The (sort key, output) feed of a $top*/$bottom* whose sortBy has ``{$meta: "textScore"}``: the
    scores live in the read's DocMeta, which only the run-time variables carry, so the key function
    is made when a read's table is first seen (once per read, not per document)."""
    made: list = [None, None]

    def evaluate_pair(doc: Any, vars: dict) -> tuple:
        meta = docmeta.table(vars)
        if made[0] is not meta or made[1] is None:
            made[0], made[1] = meta, make_sort_key(fields, collation, meta)
        return made[1](doc), output_fn(doc, vars)

    return evaluate_pair


# mongod 7.0's IDL specs of $percentile and $median: their fields, in declaration order (the order
# in which missing required fields are reported).
_PERCENTILE_FIELDS = {"$percentile": ("input", "p", "method"), "$median": ("input", "method")}


def _percentile(name: str, arg: Any, variables: dict | None) -> AccumulatorSpec:
    """$percentile/$median: mongod 7.0 parses ``{input, p, method}`` with an IDL spec (unknown field
    40415, method not a string 14, a method other than 'approximate' 2 — 7.0 has no other —, missing
    field 40414), then 'p', which must fold to a constant (7750300) non-empty array (7750301) of
    numbers (7750302) within [0, 1] (7750303)."""
    input_expr, ps, scalar = parse_percentile(name, arg, variables)
    return AccumulatorSpec(name, compile_expression(input_expr), lambda: Percentile(ps, scalar), arg)


def parse_percentile(name: str, arg: Any, variables: dict | None) -> tuple[Any, list[float], bool]:
    """The checks of ``_percentile`` (shared with the expression forms): the 'input' expression (not
    compiled), the percentiles and whether the result is one value ($median)."""
    if not isinstance(arg, dict):
        code = 7429703 if name == "$percentile" else 7436100
        raise MongoError(code, f"specification must be an object; found {_element(name, arg)}")
    fields = _PERCENTILE_FIELDS[name]
    for k, v in arg.items():
        if k not in fields:
            raise MongoError(ErrorCode.IDLUnknownField, f"BSON field '{name}.{k}' is an unknown field.")
        if k == "method":
            if type(v) is not str:
                raise MongoError(ErrorCode.TypeMismatch, f"BSON field '{name}.method' is the wrong type "
                                                         f"'{type_name(v)}', expected type 'string'")
            if v != "approximate":
                raise MongoError(ErrorCode.BadValue, "Currently only 'approximate' can be used as percentile 'method'.")
    for k in fields:
        if k not in arg:
            raise MongoError(ErrorCode.IDLFailedToParse, f"BSON field '{name}.{k}' is missing but a required field")
    if name == "$median":
        return arg["input"], [0.5], True
    return arg["input"], _parse_p(arg["p"], variables), False


def _parse_p(p_expr: Any, variables: dict | None) -> list[float]:
    compile_expression(p_expr)
    ok, ps = fold_constant(p_expr, variables)
    if not ok:
        raise MongoError(7750300, "The $percentile 'p' field must be an array of constant values, but found "
                                  f"value: {bson_repr(p_expr)}.")
    msg = "The $percentile 'p' field must be an array of numbers from [0.0, 1.0], but found: "
    if type(ps) is not list or not ps:
        raise MongoError(7750301, msg + bson_repr(ps))
    out = []
    for p in ps:
        if num_kind(p) is None:
            raise MongoError(7750302, msg + bson_repr(p))
        f = as_float(p)
        if not 0 <= f <= 1:  # NaN fails too, as in mongod
            raise MongoError(7750303, msg + format(f, "g"))  # (a C++ stream's double)
        out.append(f)
    return out


_SIMPLE: dict[str, Callable[[], Accumulator]] = {
    "$sum": Sum,
    "$avg": Avg,
    "$min": lambda: MinMax(-1),
    "$max": lambda: MinMax(1),
    "$first": First,
    "$last": Last,
    "$push": Push,
    "$addToSet": AddToSet,
    "$stdDevPop": lambda: StdDev(False),
    "$stdDevSamp": lambda: StdDev(True),
    "$mergeObjects": MergeObjects,
}
# The sliding-window states (``AccumulatorSpec.sliding``) of the simple accumulators that have one, under
# the simple collation ($max compares with the command's collation: parse_accumulator makes its own).
_SLIDING: dict[str, Callable[[], Accumulator]] = {
    "$sum": WindowSum, "$avg": WindowAvg, "$max": lambda: WindowMax(compare),
    "$stdDevPop": lambda: WindowStdDev(False), "$stdDevSamp": lambda: WindowStdDev(True),
}
# The accumulators whose parse reads nothing but their argument and the collation (no 'n' or 'p' that
# reads the command's variables or the group key).
SPEC_ONLY = frozenset(_SIMPLE) | {"$count"}
ACCUMULATORS = frozenset(_SIMPLE) | {"$count", "$top", "$bottom", "$topN", "$bottomN", "$firstN", "$lastN",
                                     "$maxN", "$minN", "$median", "$percentile", "$accumulator"}


def parse_accumulator(name: str, arg: Any, collation: Any = None,
                      variables: dict | None = None, *, group_key_n: bool = False) -> AccumulatorSpec:
    """Validate and compile one accumulator; 15952 for an unknown name. ``collation``
    (``collation.Collation`` or None for simple) orders strings for $min/$max/$addToSet/$minN/
    $maxN/$top*/$bottom* and in the argument expression. ``variables`` are the command's (``let``
    and NOW): an 'n' or a $percentile 'p' may read them, as they are fixed for the whole command.
    ``group_key_n`` ($group): an 'n' may also read the group key (``spec.new_for``)."""
    if name in _SIMPLE:  # (look-ups, not calls: several accumulators parse per request)
        factory = _SIMPLE[name]
        if type(arg) is not str:  # (the usual "$field" is no list: no call)
            arg = _unary(name, arg)
        field = arg[1:] if type(arg) is str and arg[:1] == "$" and arg[1:2] != "$" and "." not in arg else None
        sliding = _SLIDING[name] if name in _SLIDING else None
        if collation is not None and name in ("$min", "$max", "$addToSet"):
            ckey, cmp = collation.sort_key, collation.compare
            factory = {"$min": lambda: MinMax(-1, cmp), "$max": lambda: MinMax(1, cmp),
                       "$addToSet": lambda: AddToSet(ckey)}[name]
            if name == "$max":
                sliding = lambda: WindowMax(cmp)  # noqa: E731
            field = None  # the batch fast paths compare with the simple collation
        return AccumulatorSpec(name, compile_expression(arg, collation=collation), factory, arg, field,
                               sliding=sliding)
    if name == "$count":
        if arg != {}:
            raise MongoError(ErrorCode.TypeMismatch, "$count takes no arguments, i.e. $count:{}")
        return AccumulatorSpec(name, lambda doc, vars: 1, Count, arg)
    if name in ("$top", "$bottom", "$topN", "$bottomN"):
        return _sorted_n(name, arg, collation, variables, group_key_n)
    if name in ("$firstN", "$lastN"):
        return _n_values(name, arg, lambda n: FirstLastN(n, name == "$lastN"), collation, variables, group_key_n)
    if name in ("$maxN", "$minN"):
        key = sort_key if collation is None else collation.sort_key
        return _n_values(name, arg, lambda n: MinMaxN(n, name == "$maxN", key), collation, variables, group_key_n)
    if name in ("$median", "$percentile"):
        return _percentile(name, arg, variables)
    if name == "$accumulator":
        return _js_accumulator(arg, collation)
    if name == "$_internalJsReduce":
        return _js_reduce(arg, collation)
    raise MongoError(15952, f"unknown group operator '{name}'")


def _js_function_source(field: str, value: Any, collation: Any) -> str:
    fn = compile_expression(value, collation=collation)
    if not is_constant(value):
        raise MongoError(4544701, f"$accumulator '{field}' must be a constant expression")
    v = fn(None, {})
    if not isinstance(v, str):  # (a JavaScript value, bson Code, is a str subclass: taken too)
        raise MongoError(4544702, f"$accumulator '{field}' must be a String or Code")
    return str(v)


def _js_accumulator(arg: Any, collation: Any) -> AccumulatorSpec:
    """``{$accumulator: {init, initArgs, accumulate, accumulateArgs, merge, finalize, lang: "js"}}``
    (mongod's AccumulatorJs: codes and messages). Fed ``(initArgs, accumulateArgs)`` per document: the
    group's first ``initArgs`` starts the state; accumulate calls are batched into one JavaScript loop
    (``JsAccumulator``). ``merge`` joins two partial states of a group when a ``$group`` spilled."""
    if not isinstance(arg, dict):
        raise MongoError(4544703, f"$accumulator expects an object as an argument; found: {type_name(arg)}")
    sources: dict[str, str] = {}
    init_args: Any = []
    accumulate_args: Any = None
    for name, value in arg.items():
        if name in ("init", "accumulate", "merge", "finalize"):
            sources[name] = _js_function_source(name, value, collation)
        elif name == "initArgs":
            init_args = value
        elif name == "accumulateArgs":
            accumulate_args = value
        elif name == "lang":
            if type(value) is not str:
                raise MongoError(4544704, f"$accumulator lang must be a string; found: {type_name(value)}")
            if value != "js":
                raise MongoError(4544705, "$accumulator only supports lang: 'js'")
        else:
            raise MongoError(4544706, f"$accumulator got an unexpected field: {name}")
    for required in ("init", "accumulate", "merge"):
        if not sources.get(required):
            raise MongoError(4544707 + ("init", "accumulate", "merge").index(required),
                             f"$accumulator missing required argument '{required}'")
    if "accumulateArgs" not in arg:
        raise MongoError(4544710, "$accumulator missing required argument 'accumulateArgs'")
    init_fn = compile_expression(init_args, collation=collation)
    acc_fn = compile_expression(accumulate_args, collation=collation)
    init = javascript.JsFunction(sources["init"])
    loop = javascript.JsFunction(
        "function (state, pending) { var __accumulate = (" + sources["accumulate"] + "\n);"
        " for (var i = 0; i < pending.length; ++i) {"
        " state = __accumulate(state, ...pending[i]); } return state; }")  # (spread: no user-visible apply)
    finalize = javascript.JsFunction(sources["finalize"]) if sources.get("finalize") else None
    merge = javascript.JsFunction(sources["merge"])
    return AccumulatorSpec("$accumulator", lambda doc, vars: (init_fn, acc_fn, doc, vars),
                           lambda: JsAccumulator(init, loop, finalize, merge), arg)


_JS_REDUCE = "$_internalJsReduce"


def _js_reduce(arg: Any, collation: Any) -> AccumulatorSpec:
    """``{$_internalJsReduce: {data: <expression>, eval: <function(key, values)>}}``, the reduce step of
    mongod's mapReduce as a $group accumulator (AccumulatorInternalJsReduce; an internal name, so not
    in ``ACCUMULATORS``: no window function, no expression). Codes and messages are mongod's."""
    if not isinstance(arg, dict):
        raise MongoError(31326, f"{_JS_REDUCE} requires a document argument, but found {type_name(arg)}")
    source, data = "", None
    for name, value in arg.items():
        if name == "eval":
            if not isinstance(value, str):  # (bson Code is a str subclass)
                raise MongoError(31244, f"{_JS_REDUCE} requires the 'eval' argument to be of type string, or code "
                                        f"but found {type_name(value)}")
            source = str(value)
        elif name == "data":
            data = compile_expression(value, collation=collation)
        else:
            raise MongoError(31243, f"Invalid argument specified to {_JS_REDUCE}: {name}: {bson_repr(value)}")
    if not source:
        raise MongoError(31245, f"{_JS_REDUCE} requires 'eval' argument, recieved input: {bson_repr(arg)}")
    if data is None:
        raise MongoError(31349, f"{_JS_REDUCE} requires 'data' argument, recieved input: {bson_repr(arg)}")
    reduce = javascript.JsFunction(source)
    return AccumulatorSpec(_JS_REDUCE, data, lambda: JsReduce(reduce), arg)


# mongod's BSONObjMaxUserSize: the reduce function's arguments are one BSON array of the values.
_REDUCE_ARGS_LIMIT = 16 * 1024 * 1024


class JsReduce(Accumulator):
    """One ``$_internalJsReduce`` group: each input ``{k, v}`` (exactly those two fields, else 31251)
    keeps its ``v`` (the key is the last ``k``); the result reduces them with ``reduce(key, values)``,
    the last value first, as many as fit in 16 MB per call (31392 when not even two do), the partial
    result going back in as the newest value, until one call took them all. A lone value is reduced
    too (mongod's mrSingleReduceOptimizationEnabled is off); no input: null."""

    sized = True

    def __init__(self, reduce: Any):
        self.reduce = reduce
        self.key: Any = None
        self.values: list[Any] = []
        self.size = 0

    def memory(self) -> int:
        return self.size

    def process(self, value: Any) -> None:
        if value is MISSING:
            return
        if not isinstance(value, dict):
            raise MongoError(31242, f"{_JS_REDUCE} requires a document argument, but found {type_name(value)}")
        if len(value) != 2 or "k" not in value or "v" not in value:
            raise MongoError(31251, f"{_JS_REDUCE} requires the 'data' argument to have a 'k' and 'v' field. "
                                    f"Instead found{bson_repr(value)}")
        javascript.require_enabled()
        self.key = value["k"]
        self.values.append(value["v"])
        self.size += approx_size(value["v"], _REDUCE_ARGS_LIMIT + 1)

    def merge(self, later: JsReduce) -> None:
        if later.values:
            self.key = later.key
            self.values.extend(later.values)
            self.size += later.size

    def result(self) -> Any:
        values = self.values
        if not values:
            return None
        key_size = approx_size(self.key, _REDUCE_ARGS_LIMIT + 1)
        while True:
            batch: list[Any] = []
            size = key_size
            left = len(values)
            while left:
                value_size = approx_size(values[left - 1], _REDUCE_ARGS_LIMIT + 1)
                if size + value_size > _REDUCE_ARGS_LIMIT:
                    if len(values) - left <= 1:
                        raise MongoError(31392, "Value too large to reduce")
                    break
                batch.append(values[left - 1])
                size += value_size
                left -= 1
            reduced = self.reduce.call([self.key, batch])
            if not left:
                return reduced
            values = values[:left] + [reduced]


# mongod's BSONObjMaxInternalSize: a value JavaScript hands back becomes BSON, which must fit in it.
_JS_STATE_LIMIT = 16 * 1024 * 1024 + 16 * 1024


def _checked_js_state(state: Any) -> tuple[Any, int]:
    """The state ``init``/``accumulate`` returned and an upper bound of its BSON size, refused as mongod
    refuses converting it to BSON when it passes 16 MB: an object or array 17260, a scalar (a long
    string) 10334. The estimate stops early; the exact encoding runs only when it says too big."""
    estimate = approx_size(state, _JS_STATE_LIMIT)
    if estimate <= _JS_STATE_LIMIT:
        return state, estimate
    size = len(encode({"": state}))
    if size <= _JS_STATE_LIMIT:
        return state, size
    if isinstance(state, (dict, list)):
        raise MongoError(17260, f"Converting from JavaScript to BSON failed: Object size {size} exceeds limit "
                                f"of {_JS_STATE_LIMIT} bytes.")
    raise MongoError(ErrorCode.BSONObjectTooLarge, f"BSONObj size: {size} ({size:#x}) is invalid. Size must be "
                                                   f"between 0 and {_JS_STATE_LIMIT}(16MB)")


class JsAccumulator(Accumulator):
    """The state of one ``$accumulator`` group: ``init(...initArgs)`` on the first document, then
    ``accumulate`` over batches of pending argument arrays, ``finalize`` at the end.

    Invariant: ``state_size`` bounds the BSON size of ``state`` as the last batch left it. A batch runs
    at 1,024 pending calls or 1 MB of pending arguments, so a large argument meets the state it will be
    passed with: mongod checks each call's state and argument together against 16 MB (4545000)."""

    BATCH = 1024
    BATCH_BYTES = 1024 * 1024

    def __init__(self, init: Any, loop: Any, finalize: Any, merge: Any):
        self.init, self.loop, self.finalize, self.merge_fn = init, loop, finalize, merge
        self.started = False
        self.state: Any = None
        self.state_size = 0
        self.pending: list = []
        self.pending_size = 0

    def process(self, value: Any) -> None:
        init_fn, acc_fn, doc, vars = value
        javascript.require_enabled()
        if not self.started:
            init_args = init_fn(doc, vars)
            if type(init_args) is not list:
                raise MongoError(4544711, f"$accumulator initArgs must evaluate to an array: {init_args}")
            self.state, self.state_size = _checked_js_state(self.init.call(init_args))
            self.started = True
        args = acc_fn(doc, vars)
        if type(args) is not list:
            raise MongoError(4544712, f"$accumulator accumulateArgs must evaluate to an array: {args}")
        size = approx_size(args, _JS_STATE_LIMIT)
        if self.state_size + size > _JS_STATE_LIMIT:
            self._reduce()  # the state this call will see
            if len(encode({"s": self.state, "a": args})) > _JS_STATE_LIMIT:
                raise MongoError(4545000, "$accumulator state and argument together exceed max BSON size")
        self.pending.append(args)
        self.pending_size += size
        if len(self.pending) >= self.BATCH or self.pending_size >= self.BATCH_BYTES:
            self._reduce()

    def _reduce(self) -> None:
        if self.pending:
            pending, self.pending, self.pending_size = self.pending, [], 0
            self.state, self.state_size = _checked_js_state(self.loop.call([self.state, pending]))

    def merge(self, later: JsAccumulator) -> None:
        """mongod's AccumulatorJs merging: ``merge(state, laterState)`` gives the state."""
        self._reduce()
        later._reduce()
        if not self.started:
            self.started, self.state, self.state_size = later.started, later.state, later.state_size
        elif later.started:
            javascript.require_enabled()
            self.state, self.state_size = _checked_js_state(self.merge_fn.call([self.state, later.state]))

    def result(self) -> Any:
        self._reduce()
        if self.finalize is not None:
            return self.finalize.call([self.state])
        return self.state


def make_accumulator(name: str, arg_expr: Any) -> Accumulator:
    """A fresh accumulator for ``name`` (feed it values evaluated from ``arg_expr``)."""
    return parse_accumulator(name, arg_expr).new()


