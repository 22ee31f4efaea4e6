"""Per-group accumulator state (``process(value)`` then ``result()``), one class per accumulator.

Created by ``accumulators.parse_accumulator`` (which validates and compiles the argument) for each
group or window. Semantics follow mongod: $sum/$avg ignore non-numbers ($sum of ints is an int,
widening to long and then double on overflow; any double makes a double; any decimal makes a
decimal); $min/$max use BSON order and ignore null/missing; $first/$last keep null (missing becomes
null); $push/$addToSet drop missing; $top/$bottom(N) are fed (sort key, output) pairs and output
missing as null; $stdDevPop/$stdDevSamp are mongod's Welford update in doubles. ``remove(value)``
exists on the accumulators windows can slide (``removable``: ``WindowSum``/``WindowAvg``/``WindowStdDev``
— $sum/$avg/$stdDev* over a window whose lower bound moves, mongod's removable window functions with
their own result rules —, $count, covariance); windows rebuild the others. ``process_many`` is the
batch form.

Memory (what ``$group`` counts against its limit, as mongod's accumulators count ``_memUsageBytes``):
``merge(later)`` folds in the state of the same group built from inputs that came after this one's (a
``$group`` that spilled keeps partial states of a group in several generations; mongod's accumulators
merge partial results the same way, ``processInternal(..., merging=true)``): the result is the one the
inputs in order would give.

``memory()`` is about the bytes of the values the state keeps now — nothing for a state of fixed size
(``sized`` False: $sum $avg $count $stdDev*...), the one value a $first/$last/$min/$max keeps, every
value a $push/$addToSet/$percentile (and a sliding window's $stdDev*) keeps, the merged document of
$mergeObjects, and only the (at most n) values an N accumulator keeps: a value it drops stops counting (mongod's AccumulatorN family,
accumulator_multi.cpp, counts a value when it is kept and uncounts it when it is evicted). The
$top*/$bottom* and $minN/$maxN keep their n best in a heap, so they hold no more than that either.
Sizes are measured when a value is kept (or when ``memory()`` is asked, for the lists that only
grow), never on the window path, which does not ask.
"""

from __future__ import annotations

import datetime as _dt
import heapq
import math
from collections import deque
from collections.abc import Callable
from decimal import ROUND_HALF_EVEN, Decimal
from itertools import islice
from typing import Any, cast

from bson import Decimal128, Int64

from tidemark.protocol.errors import MongoError
from tidemark.query.expr_base import (
    DECIMAL_CONTEXT,
    KIND_DECIMAL,
    KIND_DOUBLE,
    KIND_INT,
    KIND_LONG,
    as_float,
    make_decimal,
    make_integer,
    num_kind,
    type_name,
)
from tidemark.query.memory import approx_size
from tidemark.query.value_repr import bson_repr
from tidemark.query.values import MISSING, Descending, compare, sort_key

_FIXED_SIZE = frozenset({int, float, bool, _dt.datetime, type(None), type(MISSING)})


def value_size(v: Any) -> int:
    """``approx_size(v)``, without the call for the common scalars."""
    t = type(v)
    if t is str:
        return 16 + len(v)
    if t in _FIXED_SIZE:
        return 16
    return approx_size(v)


class Accumulator:
    """Per-group state: ``process(value)`` then ``result()``; ``remove`` when ``removable``;
    ``memory()`` when ``sized`` (see the module)."""

    removable = False
    sized = False  # True: the state keeps values, ``memory()`` says how many bytes of them

    def memory(self) -> int:
        """About the bytes of the values the state keeps now (0 for a state of fixed size)."""
        return 0

    def process(self, value: Any) -> None:
        raise NotImplementedError

    def process_many(self, values: list) -> None:
        """Feed a batch in order (overridden where a whole-list builtin is faster)."""
        for v in values:
            self.process(v)

    def process_repeated(self, value: Any, times: int) -> None:
        """Feed ``value`` ``times`` times (overridden where the state can take them at once: a count of
        measurements answered per bucket, tidemark.timeseries.rowcount)."""
        for _ in range(times):
            self.process(value)

    def result(self) -> Any:
        raise NotImplementedError

    def remove(self, value: Any) -> None:
        raise NotImplementedError

    def merge(self, later: Any) -> None:
        """Fold in ``later``: this group's state over the inputs that came after this state's (see the
        module). Every accumulator a ``$group`` takes has it."""
        raise NotImplementedError


class Sum(Accumulator):
    """$sum: exact integer part, near-exact double part, Decimal part; the widest kind decides.

    Doubles are buffered and folded into a double-double (hi, lo) with ``math.fsum`` (like mongod's
    DoubleDoubleSummation): the result does not depend on input order, so a time-series collection
    and a regular one holding the same data give the same sums.

    Not ``removable``: a window that slides takes ``WindowSum``, whose sum this is (``remove`` is its
    negation of a finite value).
    """

    _FLUSH = 512

    def __init__(self):
        self.kind = KIND_INT
        self.ints = 0
        self.floats: list[float] = []
        self.hi = 0.0
        self.lo = 0.0
        self.dec: Decimal | None = None
        self.count = 0

    def process(self, v: Any) -> None:
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

    def process_repeated(self, v: Any, times: int) -> None:
        if type(v) is not int:
            super().process_repeated(v, times)
            return
        # the same state as ``times`` calls of ``process(v)``: the kind follows each value, not the total
        self.ints += v * times
        if self.kind == KIND_INT and not -2147483648 <= v <= 2147483647:
            self.kind = KIND_LONG
        self.count += times

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

    def merge(self, later: Sum) -> None:
        later._flush()  # its doubles' exact sum as a double-double: exact inside fsum again
        self.floats += (later.hi, later.lo)
        if len(self.floats) >= self._FLUSH:
            self._flush()
        self.ints += later.ints
        if later.dec is not None:
            self.dec = DECIMAL_CONTEXT.add(self.dec or Decimal(0), later.dec)
        self.count += later.count
        self.kind = max(self.kind, later.kind)

    def remove(self, v):
        """Take a finite number fed before back out (exactly: its negation joins the same sums)."""
        k = num_kind(v)
        if k is None:
            return
        self.count -= 1
        if type(v) is float:
            self.floats.append(-v)  # cancels exactly inside fsum
        elif k == KIND_DECIMAL:
            self.dec = DECIMAL_CONTEXT.subtract(self.dec or Decimal(0), v.to_decimal())
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
            # hi is already the correctly rounded total: adding lo (itself rounded) could land on a
            # tie and round hi to its neighbour
            return self.hi
        # The integer part joins exactly (mongod adds longs to its double-double summation in two
        # exact halves): rounding it to a double first could round twice.
        ints_hi = float(self.ints)
        try:
            return math.fsum([self.hi, self.lo, ints_hi, float(self.ints - int(ints_hi))])
        except (ValueError, OverflowError):
            return self.hi + self.lo + ints_hi

    def _decimal_total(self) -> Decimal:
        # (in the 34-digit context: the thread's default one keeps only 28 digits)
        self._flush()
        add = DECIMAL_CONTEXT.add
        total = add(self.dec or Decimal(0), Decimal(self.ints))
        if self.hi or self.lo:
            total = add(total, add(_double_decimal(self.hi), _double_decimal(self.lo)))
        return total

    def result(self):
        if self.kind == KIND_DECIMAL:
            return make_decimal(self._decimal_total())
        if self.kind == KIND_DOUBLE:
            return self._double_total()
        if self.kind == KIND_INT and -2147483648 <= self.ints <= 2147483647:
            return self.ints
        return make_integer(self.ints, KIND_LONG)


def _double_decimal(x: float) -> Decimal:
    """A double as mongod's $sum/$avg turn their double part into a decimal (``Decimal128(double,
    kRoundTo34Digits)``): the double's exact binary value rounded to 34 digits, so 0.2 counts as
    0.2000000000000000111022302462515654 (not the shortest repr, which is what 15-digit conversions
    such as $toDecimal give)."""
    return DECIMAL_CONTEXT.plus(Decimal(x))


class Avg(Sum):
    def result(self):
        if self.count == 0:
            return None
        if self.kind == KIND_DECIMAL:
            return make_decimal(DECIMAL_CONTEXT.divide(self._decimal_total(), self.count))
        if self.kind == KIND_DOUBLE:
            return self._double_total() / self.count
        # mongod divides the total as a double (not the exact quotient of two integers)
        return float(self.ints) / self.count


_DEC_NAN, _DEC_INF, _DEC_NEG_INF = Decimal128("NaN"), Decimal128("Infinity"), Decimal128("-Infinity")


def _int_or_long(v: int) -> Any:
    """mongod's Value::createIntOrLong: an int when it fits 32 bits, else a long."""
    return v if -2147483648 <= v <= 2147483647 else Int64(v)


def _llround(x: float) -> int:
    """C's llround: to the nearest integer, halves away from zero (``x - int(x)`` is exact)."""
    i = int(x)
    frac = x - i
    if frac >= 0.5:
        return i + 1
    if frac <= -0.5:
        return i - 1
    return i


class WindowSum(Accumulator):
    """$sum over a window whose lower bound moves (mongod's RemovableSum, window_function_sum.cpp;
    a window starting at 'unbounded' only grows and takes the $group accumulator, ``Sum``, as mongod's
    WindowFunctionExecNonRemovable does). Its answer depends only on the values in the window now:

    - infinities and NaN are counted, not summed, so one that left the window no longer counts: NaN
      when the window holds a NaN or infinities of both signs, else the infinity (a Decimal128 one
      when the window holds a decimal);
    - the finite values' sum (``Sum``, with ``remove``) narrows to the widest type the window holds:
      a decimal total without decimals becomes a double (with doubles) or an integer; a double total
      without doubles an integer (C's llround) when inside the long range; and an integer total is an
      int whenever it fits 32 bits, a long otherwise (Value::createIntOrLong), whatever the inputs'
      types."""

    removable = True

    def __init__(self) -> None:
        self.total = Sum()
        self.nan = self.pos_inf = self.neg_inf = 0
        self.doubles = self.decimals = 0

    def _update(self, v: Any, sign: int) -> bool:
        """Count ``v`` in (``sign`` 1) or out (-1); False when it is not a number."""
        t = type(v)
        if t is float:
            self.doubles += sign
            if v != v:
                self.nan += sign
            elif v == math.inf:
                self.pos_inf += sign
            elif v == -math.inf:
                self.neg_inf += sign
            elif sign > 0:
                self.total.process(v)
            else:
                self.total.remove(v)
            return True
        k = num_kind(v)
        if k is None:
            return False
        if k == KIND_DECIMAL:
            self.decimals += sign
            d = v.to_decimal()
            if d.is_nan():
                self.nan += sign
                return True
            if d.is_infinite():
                if d.is_signed():
                    self.neg_inf += sign
                else:
                    self.pos_inf += sign
                return True
        if sign > 0:
            self.total.process(v)
        else:
            self.total.remove(v)
        return True

    def process(self, v: Any) -> None:
        self._update(v, 1)

    def remove(self, v: Any) -> None:
        self._update(v, -1)

    def result(self) -> Any:
        decimal = self.decimals > 0
        if self.nan or (self.pos_inf and self.neg_inf):
            return _DEC_NAN if decimal else math.nan
        if self.pos_inf:
            return _DEC_INF if decimal else math.inf
        if self.neg_inf:
            return _DEC_NEG_INF if decimal else -math.inf
        value = self.total.result()
        t = type(value)
        if t is Decimal128 and not decimal:
            d = value.to_decimal()
            if self.doubles or not d.is_finite():
                return float(d)
            whole = int(d.to_integral_value(rounding=ROUND_HALF_EVEN))  # (Decimal128::toLong's rounding)
            return _int_or_long(whole) if -(2**63) <= whole < 2**63 else float(d)
        if t is float and not self.doubles and -(2.0**63) < value < 2.0**63:
            return _int_or_long(_llround(value))
        if t is Int64:
            return _int_or_long(int(value))
        return value


class WindowAvg(WindowSum):
    """$avg over a window whose lower bound moves (mongod's WindowFunctionAvg: a RemovableSum and a
    count of the numbers in the window): null for none, a non-finite sum as it is, else the sum
    divided by the count (an integer sum as a double; a decimal one in decimal)."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def process(self, v: Any) -> None:
        self.count += self._update(v, 1)

    def remove(self, v: Any) -> None:
        self.count -= self._update(v, -1)

    def result(self) -> Any:
        if self.count == 0:
            return None
        total = super().result()
        t = type(total)
        if t is Decimal128:
            d = total.to_decimal()
            return total if not d.is_finite() else make_decimal(DECIMAL_CONTEXT.divide(d, self.count))
        if t is float:
            return total if not math.isfinite(total) else total / self.count
        return float(total) / self.count


class Count(Accumulator):
    removable = True

    def __init__(self):
        self.n = 0

    def process(self, v):
        self.n += 1

    def process_many(self, values):
        self.n += len(values)

    def process_repeated(self, v, times):
        self.n += times

    def remove(self, v):
        self.n -= 1

    def merge(self, later: Count) -> None:
        self.n += later.n

    def result(self):
        return self.n if self.n <= 2147483647 else make_integer(self.n, KIND_LONG)


class _KeepsOne(Accumulator):
    """A state that is one value, ``value``: its size, measured again only when the value changes."""

    sized = True
    value: Any
    _measured: Any = MISSING  # the value last measured, and its size
    _size = 16

    def memory(self) -> int:
        value = self.value
        if value is not self._measured:
            self._measured, self._size = value, value_size(value)
        return self._size


class MinMax(_KeepsOne):
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
            elif v == cur:
                self.tie(v, cur)
        else:
            order = self.compare(v, cur) * self.sign
            if order > 0:
                self.value = v
            elif order == 0:
                self.tie(v, cur)

    def tie(self, v: Any, cur: Any) -> None:
        """``v`` compares equal to the value kept: the first one met stays (mongod's rule)."""

    def process_many(self, values):
        types = set(map(type, values))
        if types and types <= {float, int}:
            total = sum(values)  # NaN anywhere (or inf - inf) makes it NaN: take the exact path
            if total == total:
                self.process(max(values) if self.sign > 0 else min(values))
                return
        for v in values:
            self.process(v)

    def merge(self, later: MinMax) -> None:
        self.process(later.value)  # (a tie keeps this one's: it came first)

    def result(self):
        return None if self.value is MISSING else self.value


class WindowMax(MinMax):
    """$max over a window whose lower bound moves (mongod's WindowFunctionMax keeps the window's values
    in a multiset, each equal one after those before it, and answers its last: of equal largest values —
    1, 1.0, NumberLong(1) — the latest in the window), where the $group accumulator keeps the first."""

    def __init__(self, compare: Callable[[Any, Any], int] = compare):
        super().__init__(1, compare)

    def tie(self, v: Any, cur: Any) -> None:
        self.value = v

    def process_many(self, values):
        for v in values:
            self.process(v)


class First(_KeepsOne):
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

    def merge(self, later: First) -> None:
        if not self.seen and later.seen:
            self.seen, self.value = True, later.value

    def result(self):
        return self.value


class Last(_KeepsOne):
    def __init__(self):
        self.value = None

    def process(self, v):
        self.value = None if v is MISSING else v

    def process_many(self, values):
        if values:
            self.process(values[-1])

    def merge(self, later: Last) -> None:
        self.value = later.value  # (a state exists once its group met an input)

    def result(self):
        return self.value


class Push(Accumulator):
    sized = True

    def __init__(self):
        self.values: list = []
        self._measured = 0  # the values measured so far (the first ones) and their bytes
        self._bytes = 0

    def memory(self) -> int:
        if self._measured < len(self.values):
            self._bytes += sum(map(value_size, self.values[self._measured:]))
            self._measured = len(self.values)
        return self._bytes

    def process(self, v):
        if v is not MISSING:
            self.values.append(v)

    def process_many(self, values):
        self.values.extend(v for v in values if v is not MISSING)

    def merge(self, later: Push) -> None:
        self.values.extend(later.values)

    def result(self):
        return list(self.values)  # a copy: sliding windows keep appending to the state


class AddToSet(Accumulator):
    sized = True

    def __init__(self, sort_key: Callable[[Any], tuple] = sort_key):
        self.values: dict = {}
        self.sort_key = sort_key
        self._measured = 0  # the distinct values measured so far (the first ones) and their bytes
        self._bytes = 0

    def memory(self) -> int:
        new = len(self.values) - self._measured
        if new:  # (the values added since are the last ones of the dict)
            self._bytes += sum(map(value_size, islice(reversed(self.values.values()), new)))
            self._measured = len(self.values)
        return self._bytes

    def process(self, v):
        if v is not MISSING:
            self.values.setdefault(self.sort_key(v), v)

    def merge(self, later: AddToSet) -> None:
        for key, v in later.values.items():
            self.values.setdefault(key, v)

    def result(self):
        return list(self.values.values())


class StdDev(Accumulator):
    """$stdDevPop/$stdDevSamp as mongod's AccumulatorStdDev (accumulator_std_dev.cpp): Welford's online
    update of a count, a mean and a sum of squared differences, in doubles, in input order — mongod's
    answer to the last bit, in constant memory (mongod counts the state's fixed size: nothing kept, so
    a $group of millions of values per group stays far below its limit); ``merge`` is mongod's merge of
    partial states (the parallel algorithm). Over a window whose lower bound moves: ``WindowStdDev``."""

    def __init__(self, sample: bool):
        self.sample = sample
        self.count = 0
        self.mean = 0.0
        self.m2 = 0.0

    def process(self, v):
        if num_kind(v) is None:
            return
        x = as_float(v)
        self.count += 1
        delta = x - self.mean
        if delta != 0.0:
            self.mean += delta / self.count
            self.m2 += delta * (x - self.mean)

    def process_many(self, values):
        if set(map(type, values)) != {float}:
            for v in values:
                self.process(v)
            return
        count, mean, m2 = self.count, self.mean, self.m2
        for x in values:
            count += 1
            delta = x - mean
            if delta != 0.0:
                mean += delta / count
                m2 += delta * (x - mean)
        self.count, self.mean, self.m2 = count, mean, m2

    def merge(self, later: StdDev) -> None:
        count = later.count
        if count == 0:
            return
        if self.count == 0:
            # mongod's formula below, whose n * mean overflows (to NaN) for a mean past DBL_MAX / n: the
            # same bits where it does not, the later mean itself where it would
            scaled = count * later.mean
            self.count, self.m2 = count, later.m2
            self.mean = scaled / count if math.isfinite(scaled) else later.mean
            return
        delta = later.mean - self.mean
        total = count + self.count
        if delta != 0.0:
            self.mean = (self.count * self.mean + count * later.mean) / total
            self.m2 += delta * delta * (float(self.count) * count / total)
        self.m2 += later.m2
        self.count = total

    def result(self):
        adjusted = self.count - 1 if self.sample else self.count
        if adjusted <= 0:
            return None
        variance = self.m2 / adjusted
        return math.sqrt(variance) if variance >= 0 else math.nan  # (C's sqrt of a negative: NaN)


class WindowStdDev(Accumulator):
    """$stdDevPop/$stdDevSamp over a window whose lower bound moves: every number of the window kept, so
    one leaves exactly; the result is the exact two-pass deviation (mongod's WindowFunctionStdDev keeps
    running sums instead: its last bits may differ)."""

    removable = True
    sized = True  # (every number is kept: the exact two-pass result needs them)

    def __init__(self, sample: bool):
        self.sample = sample
        self.n = 0
        self.values: list[float] = []

    def memory(self) -> int:
        return 16 * len(self.values)

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
        f = as_float(v)
        if f != f:  # NaN equals nothing, itself included: remove the first NaN
            del self.values[next(i for i, x in enumerate(self.values) if x != x)]
        else:
            self.values.remove(f)

    def result(self):
        n = self.n
        if n == 0 or (self.sample and n < 2):
            return None
        adjusted = n - 1 if self.sample else n
        # Two exact passes (the answer does not depend on the input order); past the double range
        # (infinities, NaN, squares that overflow) mongod's own online algorithm decides instead.
        try:
            mean = math.fsum(self.values) / n
            ss = math.fsum([(x - mean) * (x - mean) for x in self.values])
        except (ValueError, OverflowError):  # inf - inf, or an exact sum beyond the double range
            ss = math.nan
        if not math.isfinite(ss):
            return self._welford(adjusted)
        return math.sqrt(ss / adjusted)

    def _welford(self, adjusted: int) -> float:
        """mongod's AccumulatorStdDev arithmetic over the window's values (``StdDev``), with its IEEE
        results: an infinity or NaN among the values gives NaN, an overflowing spread +inf."""
        state = StdDev(self.sample)
        state.process_many(self.values)
        return cast(float, state.result())


class Covariance(Accumulator):
    """``$covariancePop``/``$covarianceSamp`` (window functions only): the input is a pair ``[x, y]``;
    anything else is ignored, as in mongod. Sums are kept relative to the first pair seen (covariance
    does not change under a shift, and the shift keeps the sums small), so adding and removing a pair
    is O(1). A pair with NaN, or with infinities of both signs, makes the result NaN; other infinite
    pairs make it +/-inf (mongod adds them to its co-moment as such)."""

    removable = True

    def __init__(self, sample: bool):
        self.sample = sample
        self.n = 0
        self.shift: tuple[float, float] | None = None
        self.sx = self.sy = self.sxy = 0.0
        self.nan = self.pos_inf = self.neg_inf = 0
        self.decimal = 0

    @staticmethod
    def _pair(v):
        if type(v) is not list or len(v) != 2 or num_kind(v[0]) is None or num_kind(v[1]) is None:
            return None
        return as_float(v[0]), as_float(v[1])

    def _update(self, v, sign: int) -> None:
        pair = self._pair(v)
        if pair is None:
            return
        self.decimal += sign * sum(num_kind(x) == KIND_DECIMAL for x in v)
        x, y = pair
        if not (math.isfinite(x) and math.isfinite(y)):
            infinities = [z for z in pair if math.isinf(z)]
            if math.isnan(x) or math.isnan(y) or (min(infinities) < 0 < max(infinities)):
                self.nan += sign
            elif infinities[0] > 0:
                self.pos_inf += sign
            else:
                self.neg_inf += sign
            return
        if self.shift is None:
            self.shift = (x, y)
        x -= self.shift[0]
        y -= self.shift[1]
        self.n += sign
        self.sx += sign * x
        self.sy += sign * y
        self.sxy += sign * x * y
        if self.n == 0:
            self.shift, self.sx, self.sy, self.sxy = None, 0.0, 0.0, 0.0

    def process(self, v):
        self._update(v, 1)

    def remove(self, v):
        self._update(v, -1)

    def result(self):
        n = self.n
        if n == 1 and not self.sample:
            out = 0.0
        else:
            adjusted = n - 1 if self.sample else n
            if adjusted <= 0:
                return None
            if self.nan or (self.pos_inf and self.neg_inf):
                out = math.nan
            elif self.pos_inf or self.neg_inf:
                out = math.inf if self.pos_inf else -math.inf
            else:
                out = (self.sxy - self.sx * self.sy / n) / adjusted
        return make_decimal(Decimal(repr(out))) if self.decimal else out


class MergeObjects(Accumulator):
    sized = True

    def __init__(self):
        self.value: dict = {}

    def memory(self) -> int:
        return approx_size(self.value)  # (mongod's: the merged document's size, after each input)

    def process(self, v):
        if v is None or v is MISSING:
            return
        if type(v) is not dict:
            raise MongoError(40400, f"$mergeObjects requires object inputs, but input {bson_repr(v)} is of type "
                                    f"{type_name(v)}")
        self.value.update(v)

    def merge(self, later: MergeObjects) -> None:
        self.value.update(later.value)

    def result(self):
        return dict(self.value)


class _KeepsBestN(Accumulator):
    """The n best values by a rank (unique: it ends with the arrival number), as a heap whose root is
    the worst kept one; a value better than it takes its place, else is dropped. ``bytes``: the sizes
    of the values kept (what mongod's AccumulatorN counts: a value when kept, minus it when evicted).
    Heap entries: (rank, size, value); a rank is (key, arrival): the n smallest are kept
    (``smallest``: the rank wrapped in ``Descending``), else the n greatest with the arrival negated —
    or, ``later_ranks_higher``, as it is (mongod's $maxN: of equal values the later ranks higher, so it
    is output first and the earliest is evicted first). Either way a later value equal in key to the
    worst kept one is not better (the one kept stays) unless ``ties_enter``."""

    later_ranks_higher = False
    ties_enter = False

    sized = True

    def __init__(self, n: int, smallest: bool):
        self.n, self.smallest = n, smallest
        self.kept: list = []
        self.seq = 0
        self.bytes = 0

    def _rank(self, key: Any) -> Any:
        self.seq += 1
        if self.smallest:
            return Descending((key, self.seq))
        return (key, self.seq) if self.later_ranks_higher else (key, -self.seq)

    def _wanted(self, key: Any) -> bool:
        """Whether a value of sort key ``key`` is kept: there is room, or it is better than the worst kept
        (told by the keys alone: the later arrival loses a tie)."""
        kept = self.kept
        if len(kept) < self.n:
            return True
        worst = kept[0][0]
        if self.ties_enter:
            return key <= worst.key[0] if self.smallest else worst[0] <= key
        return key < worst.key[0] if self.smallest else worst[0] < key

    def _keep(self, rank: Any, value: Any, size: int) -> None:
        """Keep a value ``_wanted`` said yes to (in place of the worst kept one when full)."""
        kept = self.kept
        if len(kept) < self.n:
            heapq.heappush(kept, (rank, size, value))
            self.bytes += size
        else:
            self.bytes += size - heapq.heapreplace(kept, (rank, size, value))[1]

    def memory(self) -> int:
        return self.bytes

    def merge(self, later: _KeepsBestN) -> None:
        """Offer ``later``'s kept values in their arrival order: what it dropped, this would have too —
        up to which of equal values stays when ``later_ranks_higher`` ($maxN: a later equal value enters
        only by evicting, so ``later`` may have kept one this would not; mongod's merge of spilled
        partial states is no more exact)."""
        arrivals = []
        for rank, size, value in later.kept:
            key, seq = rank.key if type(rank) is Descending else \
                (rank[0], rank[1] if self.later_ranks_higher else -rank[1])
            arrivals.append((seq, key, size, value))
        arrivals.sort(key=_first)
        for _seq, key, size, value in arrivals:
            if self._wanted(key):
                self._keep(self._rank(key), value, size)

    def _in_order(self, descending: bool = False) -> list:
        """The values kept, by rank (best first for ascending ranks; ``descending``: greatest first)."""
        entries = [(e[0].key if type(e[0]) is Descending else e[0], e[2]) for e in self.kept]
        entries.sort(key=_first, reverse=descending)
        return [value for _, value in entries]


def _first(entry: tuple) -> Any:
    return entry[0]


class SortedN(_KeepsBestN):
    """$top/$bottom/$topN/$bottomN: fed (sort key, output) pairs (keys of the sortBy as written); keeps
    the first n of the sort order, or its last n for $bottom*, and outputs them in sort order. Among
    equal keys the earlier document ranks first: so $bottom* rank items by (key, -arrival) and keep
    the greatest (reversing the sortBy directions instead would also change which array element an
    array's key comes from: min for ascending, max for descending). A kept item counts its output and
    its key, as mongod's."""

    def __init__(self, n: int, single: bool, bottom: bool = False):
        super().__init__(n, smallest=not bottom)
        self.single, self.bottom = single, bottom

    def process(self, pair):
        key, out = pair
        if self._wanted(key):
            self._keep(self._rank(key), out, value_size(out) + approx_size(key))

    def result(self):
        outs = [None if o is MISSING else o for o in self._in_order()]
        if self.single:
            return outs[0] if outs else None
        return outs


class FirstLastN(Accumulator):
    """$firstN/$lastN: the first (last) n values (missing as null); ``sizes`` are the kept values'."""

    sized = True

    def __init__(self, n: int, last: bool):
        self.n, self.last = n, last
        self.values: deque = deque()
        self.sizes: deque = deque()
        self.bytes = 0

    def process(self, v):
        v = None if v is MISSING else v
        if len(self.values) >= self.n:
            if not self.last:
                return
            self.values.popleft()
            self.bytes -= self.sizes.popleft()
        size = value_size(v)
        self.values.append(v)
        self.sizes.append(size)
        self.bytes += size

    def process_many(self, values):
        if not self.last:
            room = self.n - len(self.values)
            values = values[:room] if room > 0 else ()
        elif len(values) > self.n:
            values = values[-self.n:]  # (the others would be evicted by these)
        for v in values:
            self.process(v)

    def merge(self, later: FirstLastN) -> None:
        self.process_many(list(later.values))  # (each already null for missing)

    def memory(self) -> int:
        return self.bytes

    def result(self):
        return list(self.values)


class MinMaxN(_KeepsBestN):
    """$minN/$maxN: the n smallest (largest) values but null and missing, in that order, as mongod's
    AccumulatorMinMaxN keeps them in a multiset (equal values in arrival order): a value enters a full
    set only when strictly better than its worst — for $minN the latest of the equal largest, for $maxN
    the earliest of the equal smallest, which it evicts —, and the set is output from its start for
    $minN (of equal values the earlier first) and from its end for $maxN (the later first)."""

    def __init__(self, n: int, largest: bool, sort_key: Callable[[Any], tuple] = sort_key):
        super().__init__(n, smallest=not largest)
        self.largest = largest
        self.later_ranks_higher = largest
        self.sort_key = sort_key

    def process(self, v):
        if v is not None and v is not MISSING:
            key = self.sort_key(v)
            if self._wanted(key):
                self._keep(self._rank(key), v, value_size(v))

    def result(self):
        return self._in_order(descending=self.largest)


class WindowMaxN(MinMaxN):
    """$maxN over a window whose lower bound moves (mongod's WindowFunctionMinMaxN: every value of the
    window in a multiset, the first n from its end): the n largest, of equal values the later first —
    a value equal to the worst kept one enters too, evicting the earlier. $minN's window state answers
    as its $group accumulator (the first n from the start)."""

    ties_enter = True

    def __init__(self, n: int, sort_key: Callable[[Any], tuple] = sort_key):
        super().__init__(n, True, sort_key)


class Percentile(Accumulator):
    """$percentile (one value per 'p', in a list) and $median (``scalar``): the discrete percentile
    of the numbers seen. With no number, $percentile gives one null per 'p' and $median null
    (mongod's formatFinalValue)."""

    sized = True

    def __init__(self, ps: list[float], scalar: bool):
        self.ps, self.scalar = ps, scalar
        self.values: list[float] = []

    def memory(self) -> int:
        return 16 * len(self.values)

    def process(self, v):
        if num_kind(v) is not None:
            f = as_float(v)
            if not math.isnan(f):
                self.values.append(f)

    def merge(self, later: Percentile) -> None:
        self.values.extend(later.values)

    def result(self):
        if not self.values:
            return None if self.scalar else [None] * len(self.ps)
        vals = sorted(self.values)
        n = len(vals)
        out = [vals[max(0, min(n - 1, math.ceil(p * n) - 1))] for p in self.ps]
        return out[0] if self.scalar else out
