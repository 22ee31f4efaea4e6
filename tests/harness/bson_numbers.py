"""Numbers at the boundaries where BSON's numeric types meet, for the key-order and index tests.

``neighbours(f)``: the Decimal128 values next to a double — its exact value truncated, rounded up and to
nearest at 34 digits, and the 34-digit values just above and below those (a non-finite double: its one
Decimal128, ``Infinity`` / ``-Infinity`` / ``NaN``). A double and a decimal this close are where a key
encoding that rounds would find equal what the matcher finds unequal."""

from __future__ import annotations

import decimal
import math

from bson.decimal128 import Decimal128

__all__ = ["DECIMAL_CONTEXT", "neighbours"]

_DOWN = decimal.Context(prec=34, rounding=decimal.ROUND_DOWN, Emax=6144, Emin=-6143)
_UP = decimal.Context(prec=34, rounding=decimal.ROUND_UP, Emax=6144, Emin=-6143)
DECIMAL_CONTEXT = decimal.Context(prec=34, Emax=6144, Emin=-6143)  # (Decimal128's range, to nearest)


def neighbours(f: float) -> list[Decimal128]:
    """The Decimal128 values next to the double ``f`` (see the module's docstring)."""
    if not math.isfinite(f):
        return [Decimal128(str(f).replace("inf", "Infinity").replace("nan", "NaN"))]
    exact = decimal.Decimal(f)
    out = []
    for ctx in (_DOWN, _UP, DECIMAL_CONTEXT):
        d = ctx.plus(exact)
        out += [d, DECIMAL_CONTEXT.next_plus(d), DECIMAL_CONTEXT.next_minus(d)]
    return [Decimal128(d) for d in out]
