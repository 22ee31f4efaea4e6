"""Accumulators for $group, $bucket(Auto) and $setWindowFields.

Two layers, so that arguments are parsed once and state is created per group:

- ``parse_accumulator(name, arg_expr) -> AccumulatorSpec``: validates and compiles the argument;
  ``spec.evaluate(doc, vars)`` produces the value to feed, ``spec.new()`` a fresh Accumulator.
- ``make_accumulator(name, arg_expr) -> Accumulator`` (``process(value)`` / ``result()``), the
  convenience form when the caller feeds already-evaluated values.

Semantics follow mongod: $sum/$avg ignore non-numbers ($sum of ints is an int, widening to long and
then double on overflow; any double makes a double; any decimal makes a decimal); $min/$max use BSON
order and ignore null/missing; $first/$last keep null (missing becomes null); $push/$addToSet drop
missing; $top/$bottom(N) sort by ``sortBy`` with missing output as null. ``remove(value)`` exists on
the accumulators windows can slide ($sum $avg $count $stdDev*); windows rebuild the others.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from protocol.errors import ErrorCode, MongoError
from server.query.expr_base import (
    DECIMAL_CONTEXT,
    KIND_DECIMAL,
    KIND_DOUBLE,
    KIND_INT,
    KIND_LONG,
    as_float,
    int_arg,
    make_decimal,
    make_integer,
    num_kind,
    to_decimal,
    type_name,
)
from server.query.expressions import compile_expression, evaluate
from server.query.sort import make_sort_key
from server.query.values import MISSING, compare, sort_key

__all__ = ["AccumulatorSpec", "Accumulator", "parse_accumulator", "make_accumulator", "ACCUMULATORS"]


class Accumulator:
    """Per-group state: ``process(value)`` then ``result()``; ``remove`` when ``removable``."""

    removable = False

    def process(self, value: Any) -> None:
        raise NotImplementedError

    def process_many(self, values: list) -> None:
        """Feed a batch in order (overridden where a whole-list builtin is faster)."""
        for v in values:
            self.process(v)

    def result(self) -> Any:
        raise NotImplementedError

    def remove(self, value: Any) -> None:
        raise NotImplementedError


class _Sum(Accumulator):
    """$sum: exact integer part, near-exact double part, Decimal part; the widest kind decides.

    Doubles are buffered and folded into a double-double (hi, lo) with ``math.fsum`` (like mongod's
    DoubleDoubleSummation): the result does not depend on input order, so a time-series collection
    and a regular one holding the same data give the same sums.
    """

    removable = True
    _FLUSH = 512

    def __init__(self):
        self.kind = KIND_INT
        self.ints = 0
        self.floats: list[float] = []
        self.hi = 0.0
        self.lo = 0.0
        self.dec: Decimal | None = None
        self.count = 0

    def process(self, v):
        t = type(v)
        if t is float:
            self.floats.append(v)
            if len(self.floats) >= self._FLUSH:
                self._flush()
            if self.kind < KIND_DOUBLE:
                self.kind = KIND_DOUBLE
            self.count += 1
            return
        if t is int:
            self.ints += v
            if self.kind == KIND_INT and not -2147483648 <= v <= 2147483647:
                self.kind = KIND_LONG
            self.count += 1
            return
        k = num_kind(v)
        if k is None:
            return
        self.count += 1
        if k == KIND_DECIMAL:
            self.dec = DECIMAL_CONTEXT.add(self.dec or Decimal(0), v.to_decimal())
        else:  # Int64 and other int subclasses
            self.ints += int(v)
        if k > self.kind:
            self.kind = k

    def process_many(self, values):
        types = set(map(type, values))
        if types == {float}:
            self.floats.extend(values)
            if len(self.floats) >= self._FLUSH:
                self._flush()
            self.count += len(values)
            if self.kind < KIND_DOUBLE:
                self.kind = KIND_DOUBLE
            return
        for v in values:
            self.process(v)

    def process_exact_doubles(self, total: float, count: int) -> None:
        """Feed ``count`` doubles whose exact sum is the double ``total`` (a caller that summed them
        without rounding, e.g. integral values whose absolute sum stays below 2**53): the result is
        the same as feeding them one by one, since the fsum folding is exact either way."""
        self.floats.append(total)
        if len(self.floats) >= self._FLUSH:
            self._flush()
        self.count += count
        if self.kind < KIND_DOUBLE:
            self.kind = KIND_DOUBLE

    def remove(self, v):
        k = num_kind(v)
        if k is None:
            return
        self.count -= 1
        if type(v) is float:
            self.floats.append(-v)  # cancels exactly inside fsum
        elif k == KIND_DECIMAL:
            self.dec -= v.to_decimal()
        else:
            self.ints -= int(v)

    def _flush(self) -> None:
        parts = [self.hi, self.lo, *self.floats]
        self.floats = []
        try:
            hi = math.fsum(parts)
            lo = math.fsum([*parts, -hi]) if math.isfinite(hi) else 0.0
        except (ValueError, OverflowError):  # inf - inf, or an intermediate overflow
            hi, lo = sum(parts), 0.0
        self.hi, self.lo = hi, lo

    def _double_total(self) -> float:
        self._flush()
        if not self.ints:
            return self.hi + self.lo
        try:
            return math.fsum([self.hi, self.lo, float(self.ints)])
        except (ValueError, OverflowError):
            return self.hi + self.lo + float(self.ints)

    def _decimal_total(self) -> Decimal:
        self._flush()
        total = (self.dec or Decimal(0)) + Decimal(self.ints)
        if self.hi or self.lo:
            total += to_decimal(self.hi) + to_decimal(self.lo)
        return total

    def result(self):
        if self.kind == KIND_DECIMAL:
            return make_decimal(self._decimal_total())
        if self.kind == KIND_DOUBLE:
            return self._double_total()
        if self.kind == KIND_INT and -2147483648 <= self.ints <= 2147483647:
            return self.ints
        return make_integer(self.ints, KIND_LONG)


class _Avg(_Sum):
    def result(self):
        if self.count == 0:
            return None
        if self.kind == KIND_DECIMAL:
            return make_decimal(DECIMAL_CONTEXT.divide(self._decimal_total(), self.count))
        if self.kind == KIND_DOUBLE:
            return self._double_total() / self.count
        return self.ints / self.count


class _Count(Accumulator):
    removable = True

    def __init__(self):
        self.n = 0

    def process(self, v):
        self.n += 1

    def process_many(self, values):
        self.n += len(values)

    def remove(self, v):
        self.n -= 1

    def result(self):
        return self.n if self.n <= 2147483647 else make_integer(self.n, KIND_LONG)


class _MinMax(Accumulator):
    def __init__(self, sign: int, compare: Callable[[Any, Any], int] = compare):
        self.sign = sign
        self.value = MISSING
        self.compare = compare

    def process(self, v):
        if v is None or v is MISSING:
            return
        cur = self.value
        if cur is MISSING:
            self.value = v
        elif type(v) is float and type(cur) is float and v == v and cur == cur:
            if (v > cur) if self.sign > 0 else (v < cur):
                self.value = v
        elif self.compare(v, cur) * self.sign > 0:
            self.value = v

    def process_many(self, values):
        types = set(map(type, values))
        if types and types <= {float, int}:
            total = sum(values)  # NaN anywhere (or inf - inf) makes it NaN: take the exact path
            if total == total:
                self.process(max(values) if self.sign > 0 else min(values))
                return
        for v in values:
            self.process(v)

    def result(self):
        return None if self.value is MISSING else self.value


class _First(Accumulator):
    def __init__(self):
        self.seen = False
        self.value = None

    def process(self, v):
        if not self.seen:
            self.seen = True
            self.value = None if v is MISSING else v

    def process_many(self, values):
        if values and not self.seen:
            self.process(values[0])

    def result(self):
        return self.value


class _Last(Accumulator):
    def __init__(self):
        self.value = None

    def process(self, v):
        self.value = None if v is MISSING else v

    def process_many(self, values):
        if values:
            self.process(values[-1])

    def result(self):
        return self.value


class _Push(Accumulator):
    def __init__(self):
        self.values: list = []

    def process(self, v):
        if v is not MISSING:
            self.values.append(v)

    def process_many(self, values):
        self.values.extend(v for v in values if v is not MISSING)

    def result(self):
        return list(self.values)  # a copy: sliding windows keep appending to the state


class _AddToSet(Accumulator):
    def __init__(self, sort_key: Callable[[Any], tuple] = sort_key):
        self.values: dict = {}
        self.sort_key = sort_key

    def process(self, v):
        if v is not MISSING:
            self.values.setdefault(self.sort_key(v), v)

    def result(self):
        return list(self.values.values())


class _StdDev(Accumulator):
    removable = True

    def __init__(self, sample: bool):
        self.sample = sample
        self.n = 0
        self.total = 0.0
        self.total_sq = 0.0
        self.values: list[float] = []

    def process(self, v):
        if num_kind(v) is None:
            return
        f = as_float(v)
        self.n += 1
        self.values.append(f)

    def remove(self, v):
        if num_kind(v) is None:
            return
        self.n -= 1
        self.values.remove(as_float(v))

    def result(self):
        n = self.n
        if n == 0 or (self.sample and n < 2):
            return None
        mean = math.fsum(self.values) / n
        ss = math.fsum((x - mean) ** 2 for x in self.values)
        return math.sqrt(ss / (n - 1 if self.sample else n))


class _MergeObjects(Accumulator):
    def __init__(self):
        self.value: dict = {}

    def process(self, v):
        if v is None or v is MISSING:
            return
        if type(v) is not dict:
            raise MongoError(40400, f"$mergeObjects requires object inputs, but input {v!r} is of type {type_name(v)}")
        self.value.update(v)

    def result(self):
        return dict(self.value)


class _SortedN(Accumulator):
    """$top/$bottom/$topN/$bottomN: fed (sort key, output) pairs; keeps the best n."""

    def __init__(self, n: int, single: bool, bottom: bool = False):
        self.n, self.single, self.bottom = n, single, bottom
        self.items: list = []
        self.seq = 0

    def process(self, pair):
        key, out = pair
        self.items.append((key, self.seq, out))
        self.seq += 1
        if len(self.items) > 4 * self.n + 64:
            self.items.sort(key=lambda t: (t[0], t[1]))
            del self.items[self.n:]

    def result(self):
        self.items.sort(key=lambda t: (t[0], t[1]))
        outs = [None if o is MISSING else o for _, _, o in self.items[: self.n]]
        if self.bottom:  # picked with the reversed order; report them in sortBy order
            outs.reverse()
        if self.single:
            return outs[0] if outs else None
        return outs


class _FirstLastN(Accumulator):
    def __init__(self, n: int, last: bool):
        self.n, self.last = n, last
        self.values: list = []

    def process(self, v):
        v = None if v is MISSING else v
        if not self.last:
            if len(self.values) < self.n:
                self.values.append(v)
        else:
            self.values.append(v)
            if len(self.values) > self.n:
                del self.values[0]

    def result(self):
        return list(self.values)


class _MinMaxN(Accumulator):
    def __init__(self, n: int, largest: bool, sort_key: Callable[[Any], tuple] = sort_key):
        self.n, self.largest = n, largest
        self.values: list = []
        self.sort_key = sort_key

    def process(self, v):
        if v is not None and v is not MISSING:
            self.values.append(v)

    def result(self):
        return sorted(self.values, key=self.sort_key, reverse=self.largest)[: self.n]


class _Percentile(Accumulator):
    def __init__(self, ps: list[float], scalar: bool):
        self.ps, self.scalar = ps, scalar
        self.values: list[float] = []

    def process(self, v):
        if num_kind(v) is not None:
            f = as_float(v)
            if not math.isnan(f):
                self.values.append(f)

    def result(self):
        if not self.values:
            return None
        vals = sorted(self.values)
        n = len(vals)
        out = [vals[max(0, min(n - 1, math.ceil(p * n) - 1))] for p in self.ps]
        return out[0] if self.scalar else out


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
                           lambda: _SortedN(n, single, name.startswith("$bottom")), arg)


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
    return AccumulatorSpec(name, compile_expression(spec["input"]), lambda: _Percentile(ps, scalar), arg)


_SIMPLE: dict[str, Callable[[], Accumulator]] = {
    "$sum": _Sum,
    "$avg": _Avg,
    "$min": lambda: _MinMax(-1),
    "$max": lambda: _MinMax(1),
    "$first": _First,
    "$last": _Last,
    "$push": _Push,
    "$addToSet": _AddToSet,
    "$stdDevPop": lambda: _StdDev(False),
    "$stdDevSamp": lambda: _StdDev(True),
    "$mergeObjects": _MergeObjects,
}
ACCUMULATORS = frozenset(_SIMPLE) | {"$count", "$top", "$bottom", "$topN", "$bottomN", "$firstN", "$lastN",
                                     "$maxN", "$minN", "$median", "$percentile"}


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
            factory = {"$min": lambda: _MinMax(-1, ccompare), "$max": lambda: _MinMax(1, ccompare),
                       "$addToSet": lambda: _AddToSet(ckey)}[name]
            field = None  # the batch fast paths compare with the simple collation
        return AccumulatorSpec(name, compile_expression(arg, collation=collation), factory, arg, field)
    if name == "$count":
        if arg != {}:
            raise MongoError(ErrorCode.TypeMismatch, "$count takes no arguments, i.e. $count:{}")
        return AccumulatorSpec(name, lambda doc, vars: 1, _Count, arg)
    if name in ("$top", "$bottom", "$topN", "$bottomN"):
        return _sorted_n(name, arg, collation)
    if name in ("$firstN", "$lastN"):
        return _n_values(name, arg, lambda n: _FirstLastN(n, name == "$lastN"), collation)
    if name in ("$maxN", "$minN"):
        key = sort_key if collation is None else collation.sort_key
        return _n_values(name, arg, lambda n: _MinMaxN(n, name == "$maxN", key), collation)
    if name in ("$median", "$percentile"):
        return _percentile(name, arg)
    if name == "$accumulator":
        raise MongoError(ErrorCode.QueryFeatureNotAllowed, "$accumulator is not supported by Tidemark")
    raise MongoError(15952, f"unknown group operator '{name}'")


def make_accumulator(name: str, arg_expr: Any) -> Accumulator:
    """A fresh accumulator for ``name`` (feed it values evaluated from ``arg_expr``)."""
    return parse_accumulator(name, arg_expr).new()


