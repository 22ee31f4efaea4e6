"""Where the newest-first read of a ``$group`` could give another answer than the generic one (pure).

The generic ``$group`` over a time-series view takes the buckets by ascending ``_id`` (the collection
scan's order); the newest-groups read (``columnar.TopK``) takes them newest first. The accumulators
it allows are order-blind on almost every input — ``$count``, integral and double ``$sum``/``$avg``
(the double part is folded exactly), ``$max``/``$min`` of values that differ — but not on two:

- a ``$max``/``$min`` tie between values that compare equal yet are not the same BSON value (``0.0``
  and ``-0.0``, ``1`` and ``1.0``, two NaN payloads, ``{a: 1}`` and ``{a: 1.0}``): the generic stage
  keeps the first one it meets, which is the older bucket's;
- a ``$sum``/``$avg`` of Decimal128 values, whose 34-digit rounding depends on the order of the
  additions.

``order_checked`` gives a copy of a planned group whose accumulators raise ``OrderMatters`` when they
meet either case; groupbatch then answers the group again from the buckets in the generic order. A
tie of values that are the same BSON value keeps the newest-first answer: it cannot show.
"""

from __future__ import annotations

import copy
import datetime as _dt
import struct
from typing import Any

from bson.decimal128 import Decimal128

from tidemark.protocol.codec import encode
from tidemark.query.accumulator_state import Avg, MinMax, Sum
from tidemark.query.accumulators import AccumulatorSpec

_DOUBLE = struct.Struct("<d")
# types whose equal values (compare == 0 and the same type) are the same BSON value
_PLAIN_TYPES = (int, str, bool, _dt.datetime)


class OrderMatters(Exception):
    """The newest-first read met an input on which the buckets' order could change a result."""


def same_bson(a: Any, b: Any) -> bool:
    """True when ``a`` and ``b`` (equal under the BSON comparison) encode to the same bytes."""
    t = type(a)
    if t is not type(b):
        return False
    if t is float:
        return _DOUBLE.pack(a) == _DOUBLE.pack(b)
    if t in _PLAIN_TYPES:
        return True
    return encode({"": a}) == encode({"": b})


class _OrderCheckedMinMax(MinMax):
    """``MinMax`` that raises ``OrderMatters`` on a tie of different BSON values."""

    def tie(self, v: Any, cur: Any) -> None:
        if not same_bson(v, cur):
            raise OrderMatters


class _OrderCheckedSum(Sum):
    def process(self, v: Any) -> None:
        if type(v) is Decimal128:
            raise OrderMatters
        super().process(v)


class _OrderCheckedAvg(Avg):
    def process(self, v: Any) -> None:
        if type(v) is Decimal128:
            raise OrderMatters
        super().process(v)


_CHECKED = {"$max": lambda: _OrderCheckedMinMax(1), "$min": lambda: _OrderCheckedMinMax(-1),
            "$sum": _OrderCheckedSum, "$avg": _OrderCheckedAvg}


def order_checked(group: Any) -> Any:
    """A copy of the planned ``group`` (left as it is: it may be read again in the generic order)
    whose ``$max``/``$min``/``$sum``/``$avg`` accumulators raise ``OrderMatters`` where the newest-first
    order could show. Only for the plain comparison: the newest-groups read declines collations."""
    checked = copy.copy(group)
    checked.fields = [(name, _checked_spec(spec)) for name, spec in group.fields]
    return checked


def _checked_spec(spec: AccumulatorSpec) -> AccumulatorSpec:
    factory = _CHECKED.get(spec.name)
    if factory is None:
        return spec
    return AccumulatorSpec(spec.name, spec.evaluate, factory, spec.spec, spec.field)
