"""Accumulators for $group, $bucket(Auto) and $setWindowFields: parse once, create state per group.

- ``parse_accumulator(name, arg_expr) -> AccumulatorSpec``: validates and compiles the argument;
  ``spec.evaluate(doc, vars)`` produces the value to feed, ``spec.new()`` a fresh accumulator
  (``accumulator_state``: ``process(value)`` / ``result()``, semantics there).
- ``make_accumulator(name, arg_expr)``, the convenience form when the caller feeds already-evaluated
  values.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query import javascript
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
)
from tidemark.query.expr_base import as_float, int_arg, num_kind, type_name
from tidemark.query.expressions import compile_expression, evaluate, is_constant
from tidemark.query.sort import make_sort_key
from tidemark.query.values import sort_key

__all__ = ["AccumulatorSpec", "Accumulator", "parse_accumulator", "make_accumulator", "ACCUMULATORS"]


class AccumulatorSpec:
    """A parsed accumulator: ``evaluate(doc, vars)`` gives the value to feed, ``new()`` the state."""

    def __init__(self, name: str, evaluate: Callable[[Any, dict], Any], factory: Callable[[], Accumulator],
                 spec: Any, field: str | None = None):
        self.name = name
        self.evaluate = evaluate
        self.new = factory
        self.spec = spec
        # The top-level field the argument reads when it is a plain "$name" (batch fast path).
        self.field = field


def _unary(name: str, arg: Any) -> Any:
    if isinstance(arg, list):
        if len(arg) != 1:
            raise MongoError(40237, f"The {name} accumulator is a unary operator")
        return arg[0]
    return arg


def _parse_n(name: str, n_expr: Any) -> int:
    n = evaluate(n_expr, {})
    k = int_arg(n)
    if num_kind(n) is None or k is None:
        raise MongoError(5787902, f"Value for 'n' must be of integral type, but found {n!r}")
    if k <= 0:
        raise MongoError(5787908, f"'n' must be greater than 0, found {n}")
    return k


def _parse_object(name: str, arg: Any, allowed: set[str], required: tuple[str, ...]) -> dict:
    if not isinstance(arg, dict):
        raise MongoError(5787801, f"specification must be an object; found {arg!r}")
    for k in arg:
        if k not in allowed:
            raise MongoError(5787901, f"Unknown argument for '{name}': {k}")
    for k in required:
        if k not in arg:
            raise MongoError(5787906, f"Missing value for '{k}'")
    return arg


def _sorted_n(name: str, arg: Any, collation: Any) -> AccumulatorSpec:
    single = name in ("$top", "$bottom")
    spec = _parse_object(name, arg, {"sortBy", "output"} | (set() if single else {"n"}),
                         ("sortBy", "output") if single else ("n", "sortBy", "output"))
    n = 1 if single else _parse_n(name, spec["n"])
    sort_by = spec["sortBy"]
    if not isinstance(sort_by, dict) or not sort_by:
        raise MongoError(5788604, f"{name} requires a sortBy object")
    spec_sort = dict(sort_by)
    if name.startswith("$bottom"):
        spec_sort = {k: -d for k, d in sort_by.items()}
    key_fn = make_sort_key(spec_sort, collation)
    output = compile_expression(spec["output"], collation=collation)
    return AccumulatorSpec(name, lambda doc, vars: (key_fn(doc), output(doc, vars)),
                           lambda: SortedN(n, single, name.startswith("$bottom")), arg)


def _n_values(name: str, arg: Any, factory, collation: Any) -> AccumulatorSpec:
    spec = _parse_object(name, arg, {"n", "input"}, ("n", "input"))
    n = _parse_n(name, spec["n"])
    return AccumulatorSpec(name, compile_expression(spec["input"], collation=collation), lambda: factory(n), arg)


def _percentile(name: str, arg: Any) -> AccumulatorSpec:
    allowed = {"input", "method"} | ({"p"} if name == "$percentile" else set())
    spec = _parse_object(name, arg, allowed, tuple(sorted(allowed)))
    if spec["method"] not in ("approximate", "discrete", "continuous"):
        raise MongoError(ErrorCode.BadValue, "Currently only 'approximate' can be used as percentile 'method'")
    if spec["method"] == "continuous":
        raise MongoError(ErrorCode.QueryFeatureNotAllowed, f"{name} method 'continuous' is not supported by Tidemark")
    if name == "$median":
        ps, scalar = [0.5], True
    else:
        ps = spec["p"]
        if not isinstance(ps, list) or not ps or any(num_kind(p) is None or not 0 <= as_float(p) <= 1 for p in ps):
            raise MongoError(7750301, f"The $percentile 'p' field must be an array of numbers from [0.0, 1.0], but found: {ps}")
        ps, scalar = [as_float(p) for p in ps], False
    return AccumulatorSpec(name, compile_expression(spec["input"]), lambda: Percentile(ps, scalar), arg)


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
ACCUMULATORS = frozenset(_SIMPLE) | {"$count", "$top", "$bottom", "$topN", "$bottomN", "$firstN", "$lastN",
                                     "$maxN", "$minN", "$median", "$percentile", "$accumulator"}


def parse_accumulator(name: str, arg: Any, collation: Any = None) -> AccumulatorSpec:
    """Validate and compile one accumulator; 15952 for an unknown name. ``collation``
    (``collation.Collation`` or None for simple) orders strings for $min/$max/$addToSet/$minN/
    $maxN/$top*/$bottom* and in the argument expression."""
    factory = _SIMPLE.get(name)
    if factory is not None:
        arg = _unary(name, arg)
        field = arg[1:] if isinstance(arg, str) and arg[:1] == "$" and arg[1:2] != "$" and "." not in arg else None
        if collation is not None and name in ("$min", "$max", "$addToSet"):
            ckey, ccompare = collation.sort_key, collation.compare
            factory = {"$min": lambda: MinMax(-1, ccompare), "$max": lambda: MinMax(1, ccompare),
                       "$addToSet": lambda: AddToSet(ckey)}[name]
            field = None  # the batch fast paths compare with the simple collation
        return AccumulatorSpec(name, compile_expression(arg, collation=collation), factory, arg, field)
    if name == "$count":
        if arg != {}:
            raise MongoError(ErrorCode.TypeMismatch, "$count takes no arguments, i.e. $count:{}")
        return AccumulatorSpec(name, lambda doc, vars: 1, Count, arg)
    if name in ("$top", "$bottom", "$topN", "$bottomN"):
        return _sorted_n(name, arg, collation)
    if name in ("$firstN", "$lastN"):
        return _n_values(name, arg, lambda n: FirstLastN(n, name == "$lastN"), collation)
    if name in ("$maxN", "$minN"):
        key = sort_key if collation is None else collation.sort_key
        return _n_values(name, arg, lambda n: MinMaxN(n, name == "$maxN", key), collation)
    if name in ("$median", "$percentile"):
        return _percentile(name, arg)
    if name == "$accumulator":
        return _js_accumulator(arg, collation)
    raise MongoError(15952, f"unknown group operator '{name}'")


def _js_function_source(field: str, value: Any, collation: Any) -> str:
    fn = compile_expression(value, collation=collation)
    if not is_constant(value):
        raise MongoError(4544701, f"$accumulator '{field}' must be a constant expression")
    v = fn(None, {})
    if not isinstance(v, str):  # bson Code is a str
        raise MongoError(4544702, f"$accumulator '{field}' must be a String or Code")
    return str(v)


def _js_accumulator(arg: Any, collation: Any) -> AccumulatorSpec:
    """``{$accumulator: {init, initArgs, accumulate, accumulateArgs, merge, finalize, lang: "js"}}``
    (mongod's AccumulatorJs: codes and messages). Fed ``(initArgs, accumulateArgs)`` per document: the
    group's first ``initArgs`` starts the state; accumulate calls are batched into one JavaScript loop
    (``JsAccumulator``). ``merge`` is checked but never needed (one node, no spilling groups)."""
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
            if not isinstance(value, str):
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
        " state = __accumulate.apply(null, [state].concat(pending[i])); } return state; }")
    finalize = javascript.JsFunction(sources["finalize"]) if sources.get("finalize") else None
    return AccumulatorSpec("$accumulator", lambda doc, vars: (init_fn, acc_fn, doc, vars),
                           lambda: JsAccumulator(init, loop, finalize), arg)


class JsAccumulator(Accumulator):
    """The state of one ``$accumulator`` group: ``init(...initArgs)`` on the first document, then
    ``accumulate`` over batches of pending argument arrays, ``finalize`` at the end."""

    BATCH = 1024

    def __init__(self, init: Any, loop: Any, finalize: Any):
        self.init, self.loop, self.finalize = init, loop, finalize
        self.started = False
        self.state: Any = None
        self.pending: list = []

    def process(self, value: Any) -> None:
        init_fn, acc_fn, doc, vars = value
        javascript.require_enabled()
        if not self.started:
            init_args = init_fn(doc, vars)
            if type(init_args) is not list:
                raise MongoError(4544711, f"$accumulator initArgs must evaluate to an array: {init_args}")
            self.state = self.init.call(init_args)
            self.started = True
        args = acc_fn(doc, vars)
        if type(args) is not list:
            raise MongoError(4544712, f"$accumulator accumulateArgs must evaluate to an array: {args}")
        self.pending.append(args)
        if len(self.pending) >= self.BATCH:
            self._reduce()

    def _reduce(self) -> None:
        if self.pending:
            pending, self.pending = self.pending, []
            self.state = self.loop.call([self.state, pending])

    def result(self) -> Any:
        self._reduce()
        if self.finalize is not None:
            return self.finalize.call([self.state])
        return self.state


def make_accumulator(name: str, arg_expr: Any) -> Accumulator:
    """A fresh accumulator for ``name`` (feed it values evaluated from ``arg_expr``)."""
    return parse_accumulator(name, arg_expr).new()


