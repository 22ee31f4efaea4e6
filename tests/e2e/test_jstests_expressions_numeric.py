"""Ports of MongoDB's aggregation-expression jstests (group H, numeric and conversion part: arithmetic,
$mod, $floor/$ceil, $log/$pow/$exp, trigonometry, $round/$trunc, $convert, $isNumber, ``jstests/aggregation/expressions/``) to pymongo, run against a real
Tidemark server.

Each test names the jstest it ports. Values are compared with their BSON types (int32, long, double
and decimal are told apart, decimals by their exact string) and, for documents, in field order (the
jstests' ``assert.eq`` compares ``tojson`` output). Numbers the shell writes as plain JavaScript
numbers are sent as doubles. Where a jstest loads ``sbe_assert_error_override.js`` an error may carry
the classic code or its SBE equivalent; both are accepted. Behaviour is MongoDB 7.0's: cases for
8.0+ features, feature flags, failpoints, SBE-only checks and explain shapes are left out: not
ported are convert_with_base.js (featureFlagMqlJsEngineGap, FCV 8.3), replace_all.js's regex ``find``
(same flag) and filter.js's '$POISON' cases (failOnPoisonedFieldLookup failpoint).
"""

from __future__ import annotations

import base64
import datetime as dt
import functools
import math
import operator
import uuid

import pytest
from bson.binary import Binary
from bson.code import Code
from bson.dbref import DBRef
from bson.decimal128 import Decimal128
from bson.min_key import MinKey
from bson.objectid import ObjectId
from bson.regex import Regex
from bson.timestamp import Timestamp
from harness import expr_jstests
from harness.expr_jstests import (
    BAD_VALUE,
    INF,
    NAN,
    TYPE_MISMATCH,
    D,
    L,
    assert_close,
    assert_same,
    fails_on_doc,
    on_doc,
    on_doc_many,
    run_agg,
    value_of,
)
from harness.jstests import MISSING, UNDEFINED, aggregate_fails, ms, raw, rows

# the shared module-scoped collections, as this module's fixtures
xdb, one, docs = expr_jstests.xdb, expr_jstests.one, expr_jstests.docs

pytestmark = pytest.mark.commands("insert", "aggregate", "find", "create", "createIndexes")

# ==================================================================================================
# arith_overflow.js


ARITH_OVERFLOW = [
    ("$add", [(2_000_000_000, 2_000_000_000), (L(9 * 10**18), L(9 * 10**18))], [L(4_000_000_000), 1.8e19]),
    ("$subtract", [(2_000_000_000, -2_000_000_000), (L(9 * 10**18), L(-9 * 10**18))], [L(4_000_000_000), 1.8e19]),
    ("$multiply", [(2_000_000_000, -2_000_000_000), (L(9 * 10**18), L(-9 * 10**18))], [L(-4 * 10**18), -8.1e37]),
]


@pytest.mark.parametrize("op,pairs,expected", ARITH_OVERFLOW, ids=[c[0] for c in ARITH_OVERFLOW])
def test_arith_overflow_promotes(db, op, pairs, expected):
    """arith_overflow.js: ``$add``/``$subtract``/``$multiply`` of two int32s that overflow int32 give
    a long; of two longs that overflow long give a double."""
    db.c.insert_many([{"_id": i, "lhs": a, "rhs": b} for i, (a, b) in enumerate(pairs)])
    out = run_agg(db.c, [{"$project": {"res": {op: ["$lhs", "$rhs"]}}}, {"$sort": {"_id": 1}}])
    assert_same([d["res"] for d in out], expected)


# ==================================================================================================
# add.js

_ADD_DOUBLES = [
    1.4831356930199802e-05, -3.121724665346865, 3041897608700.073, 1001318343149.7166, -1714.6229586696593,
    1731390114894580.8, 6.256645803154374e-08, -107144114533844.25, -0.08839485091750919,
    -265119153.02185738, -0.02450615965231944, 0.0002684331017079073, 32079040427.68358,
    -0.04733295911845742, 0.061381859083076085, -25329.59126796951, -0.0009567520620034965,
    -1553879364344.9932, -2.1101077525869814e-08, -298421079729.5547, 0.03182394834273594,
    22.201944843278916, -33.35667991109125, 11496013.960449915, -40652595.33210472, 3.8496066090328163,
    2.5074042398147304e-08, -0.02208724071782122, -134211.37290639878, 0.17640433666616578,
    4.463787499171126, 9.959669945399718, 129265976.35224283, 1.5865526187526546e-07, -4746011.710555799,
    -712048598925.0789, 582214206210.4034, 0.025236204812875362, 530078170.91147506, -14.865307666195053,
    1.6727994895185032e-05, -113386276.03121366, -6.135827207137054, 10644945799901.145,
    -100848907797.1582, 2.2404406961625282e-08, 1.315662618424494e-09, -0.832190208349044,
    -9.779323414999364, -546522170658.2997,
]


def test_add_without_operands_is_int_zero(one):
    """add.js: ``{$add: []}`` is the int32 0."""
    assert_same(value_of(one, {"$add": []}), 0)


def test_add_of_doubles_is_not_compensated(db):
    """add.js: ``$add`` over 50 double fields sums naively left to right (no double-double
    compensation), so it equals the plain running sum and differs from ``$sum`` of the same list."""
    doc = {"_id": 0, **{f"f_{i}": v for i, v in enumerate(_ADD_DOUBLES, 1)}}
    db.c.insert_one(doc)
    paths = [f"$f_{i}" for i in range(1, len(_ADD_DOUBLES) + 1)]
    added = run_agg(db.c, [{"$project": {"add": {"$add": paths}}}])[0]["add"]
    summed = run_agg(db.c, [{"$project": {"sum": {"$sum": paths}}}])[0]["sum"]
    assert_same(added, functools.reduce(operator.add, _ADD_DOUBLES))
    assert added != summed


# ==================================================================================================
# divide.js

DIVIDE_CASES = [
    (10, 2, 5.0), (10, 2.5, 4.0), (10, L(2), 5.0), (10, D("2.5"), D("4")), (10, None, None),
    (12.5, 5, 2.5), (12.5, 2.5, 5.0), (12.5, L(5), 2.5), (12.5, D("2.5"), D("5.000000000000")), (12.5, None, None),
    (L(10), 2, 5.0), (L(10), 2.5, 4.0), (L(10), L(2), 5.0), (L(10), D("2.5"), D("4")),
    (D("12.5"), 5, D("2.5")), (D("12.5"), 2.5, D("5")), (D("12.5"), L(5), D("2.5")),
    (D("12.5"), D("2.5"), D("5")), (D("12.5"), None, None),
    (None, 2, None), (None, 2.5, None), (None, L(2), None), (None, D("2.5"), None),
    (None, 0, None), (None, 0.0, None), (None, L(0), None), (None, D("0"), None),
    # longs are converted to double before dividing (precision is lost) ...
    (L(9223372036854775807), 1.0, 9223372036854775807.0),
    # ... decimals are not
    (D("9223372036854775807"), 1.0, D("9223372036854775807")),
]


@pytest.mark.parametrize("left,right,expected", DIVIDE_CASES, ids=[f"{a!r}/{b!r}" for a, b, _ in rows(DIVIDE_CASES)])
def test_divide_types(docs, left, right, expected):
    """divide.js: ``$divide`` of field values of each numeric type pair (and null) gives the expected
    value and type: double unless a decimal is involved; null when either side is null (even / 0)."""
    assert_same(on_doc(docs, {"left": left, "right": right}, {"$divide": ["$left", "$right"]}), expected)


DIVIDE_ERRORS = [
    (1.0, 0, (16608, 4848401, BAD_VALUE)),
    (1.0, 0.0, (16608, 4848401, BAD_VALUE)),
    (1.0, L(0), (16608, 4848401, BAD_VALUE)),
    (1.0, D("0"), (16608, 4848401, BAD_VALUE)),
    (1.0, "not a number", (16609, 5073101, 7157719, TYPE_MISMATCH)),
    ("not a number", 1.0, (16609, 5073101, 7157719, TYPE_MISMATCH)),
]


@pytest.mark.parametrize("left,right,codes", DIVIDE_ERRORS, ids=[f"{a!r}/{b!r}" for a, b, _ in DIVIDE_ERRORS])
def test_divide_errors(docs, left, right, codes):
    """divide.js: dividing by a zero of any numeric type fails with 16608; a non-numeric operand fails
    with 16609."""
    fails_on_doc(docs, {"left": left, "right": right}, {"$divide": ["$left", "$right"]}, *codes)


# ==================================================================================================
# expression_mod.js

MOD_FIELDS = {
    "dub_dub": ([138.5, 3.0], 0.5),
    "dub_int": ([138.5, L(3)], 0.5),
    "dub_long": ([138.5, 3], 0.5),
    "int_dub": ([8, 3.25], 1.5),
    "int_dubint": ([8, 3.0], 2),
    "int_int": ([8, 3], 2),
    "int_long": ([8, L(3)], L(2)),
    "long_dub": ([L(8), 3.25], 1.5),
    "long_dubint": ([L(8), 3.0], L(2)),
    "long_dublong": ([L(500000000000), 450000000000.0], 50000000000.0),
    "long_int": ([L(8), 3], L(2)),
    "long_long": ([L(8), L(3)], L(2)),
    "verylong_verylong": ([L(800000000000), L(300000000000)], L(200000000000)),
}


@pytest.fixture(scope="module")
def mod_results(one) -> dict:
    """All the jstest's ``$mod`` fields computed by one ``$project``, as the jstest does."""
    out = run_agg(one, [{"$project": {"_id": 0, **{k: {"$mod": a} for k, (a, _) in MOD_FIELDS.items()}}}])
    assert len(out) == 1
    return out[0]


MOD_ROWS = [pytest.param(k, id=k) for k in MOD_FIELDS]


@pytest.mark.parametrize("field", MOD_ROWS)
def test_mod_result_types(mod_results, field):
    """expression_mod.js: ``$mod`` of each numeric type pair: a double dividend, or a double divisor
    that is not an int32-representable integer, gives a double; otherwise long if either side is a
    long, else int (so int % 3.0 is an int and long % 3.0 a long)."""
    assert_same(mod_results.get(field, MISSING), MOD_FIELDS[field][1])


@pytest.mark.parametrize("args", [[10.0, 0.0], [10, 0], [L(10), L(0)]], ids=["double", "int", "long"])
def test_mod_by_zero_fails(one, args):
    """expression_mod.js: ``$mod`` by a zero fails with 16610."""
    aggregate_fails(one, [{"$project": {"a": {"$mod": args}}}], 16610, 4848403)


@pytest.mark.parametrize(
    "args,expected",
    [([10.0, NAN], NAN), ([10.0, INF], 10.0), ([10.0, -INF], 10.0), ([NAN, 10.0], NAN)],
    ids=["x%nan", "x%inf", "x%-inf", "nan%x"],
)
def test_mod_nan_and_infinity(one, args, expected):
    """expression_mod.js: ``$mod`` with a NaN operand is NaN; x mod ±Infinity is x."""
    assert_same(value_of(one, {"$mod": args}), expected)


# ==================================================================================================
# floor_ceil.js

FLOOR_CEIL = [
    ("$ceil", L(4), L(4)), ("$ceil", NAN, NAN), ("$ceil", INF, INF), ("$ceil", -INF, -INF),
    ("$ceil", None, None), ("$ceil", -2.0, -2.0), ("$ceil", 0.9, 1.0), ("$ceil", -1.2, -1.0),
    ("$floor", L(4), L(4)), ("$floor", NAN, NAN), ("$floor", INF, INF), ("$floor", -INF, -INF),
    ("$floor", None, None), ("$floor", -2.0, -2.0), ("$floor", 0.9, 0.0), ("$floor", -1.2, -2.0),
]


@pytest.mark.parametrize("op,arg,expected", FLOOR_CEIL, ids=[f"{o}({a!r})" for o, a, _ in FLOOR_CEIL])
def test_floor_ceil(one, op, arg, expected):
    """floor_ceil.js: ``$ceil``/``$floor`` keep a long a long, NaN/±Infinity/null as they are, and
    round doubles up/down to doubles."""
    assert_same(value_of(one, {op: arg}), expected)


@pytest.mark.parametrize("op", ["$ceil", "$floor"])
def test_floor_ceil_non_numeric_fails(one, op):
    """floor_ceil.js: a string argument fails with 28765."""
    aggregate_fails(one, [{"$project": {"a": {op: "string"}}}], 28765, 4903700, 7157700)


# ==================================================================================================
# log_pow_exp.js

# (input, base, double result, decimal result)
LOG_CASES = [
    (1, 8, 0.0, "0E+33"),
    (2.5, 8, 0.4406426982957875, "0.4406426982957874492901064764964633"),
    (7, 8, 0.9357849740192015, "0.9357849740192013691473231057439436"),
    (8, 8, 1.0, "1"),
    (64, 8, 2.0, "2.000000000000000000000000000000000"),
    (65, 8, 2.0074559376761516, "2.007455937676151502755710694582028"),
    (1, 9, 0.0, "0E+33"),
    (2.5, 9, 0.41702188357323483, "0.4170218835732348650487566466679398"),
    (4, 9, 0.6309297535714574, "0.6309297535714574370995271143427609"),
    (9, 9, 1.0, "1"),
    (10, 9, 1.0479516371446924, "1.047951637144692302148283761010701"),
    (81, 9, 2.0, "2"),
    (82, 9, 2.0055843597957064, "2.005584359795706389324272570756155"),
    (1, 12.77, 0.0, "0E+33"),
    (2.5, 12.77, 0.3597390013391846, "0.3597390013391846393309152124110717"),
    (12.77, 12.77, 1.0, "1"),
    (13, 12.77, 1.0070082433896357, "1.007008243389635671677137269228113"),
    (163.0729, 12.77, 2.0, "2.000000000000000000000000000000000"),
    (170, 12.77, 2.016332738676606, "2.016332738676605709114981994718173"),
]


def _num_forms(x) -> tuple[list, list]:
    """(the non-decimal forms, the decimal form) of a jstest number: the double, and int32/long when
    it is integral; NumberDecimal of its JavaScript string."""
    integral = float(x).is_integer()
    text = str(int(x)) if integral else repr(float(x))
    plain = [float(x)] + ([int(x), L(int(x))] if integral else [])
    return plain, [D(text)]


def _log_exprs(x, base, decimal: bool) -> list[dict]:
    """``$log`` of every combination of the input's and the base's forms: those with a decimal
    (``decimal``) or those without."""
    xs_plain, xs_dec = _num_forms(x)
    bs_plain, bs_dec = _num_forms(base)
    exprs = []
    for a in xs_plain + xs_dec:
        for b in bs_plain + bs_dec:
            if (isinstance(a, Decimal128) or isinstance(b, Decimal128)) == decimal:
                exprs.append({"$log": [a, b]})
    return exprs


def _eval_many(coll, exprs: list) -> list:
    __tracebackhide__ = True
    out = run_agg(coll, [{"$project": {"_id": 0, **{f"r{i}": e for i, e in enumerate(exprs)}}}])
    return [out[0].get(f"r{i}", MISSING) for i in range(len(exprs))]


@pytest.mark.parametrize("x,base,dbl,_dec", LOG_CASES, ids=[f"log({c[0]},{c[1]})" for c in LOG_CASES])
def test_log_non_decimal(one, x, base, dbl, _dec):
    """log_pow_exp.js: ``$log`` of every double/int/long form of the input and base is a double close
    (12 places) to the expected logarithm."""
    exprs = _log_exprs(x, base, decimal=False)
    for got in _eval_many(one, exprs):
        assert_close(got, dbl)


@pytest.mark.parametrize("x,base,_dbl,dec", LOG_CASES, ids=[f"log({c[0]},{c[1]})" for c in LOG_CASES])
def test_log_decimal(one, x, base, _dbl, dec):
    """log_pow_exp.js: ``$log`` with a decimal input or base is a decimal, exactly the expected one."""
    exprs = _log_exprs(x, base, decimal=True)
    got = _eval_many(one, exprs)
    assert_same({repr(e): g for e, g in zip(exprs, got, strict=True)}, {repr(e): D(dec) for e in exprs})


LOG10_CASES = [
    (1, 0.0, "0"), (2.5, 0.3979400086720376, "0.3979400086720376095725222105510140"), (10, 1.0, "1"),
    (11, 1.041392685158225, "1.041392685158225040750199971243024"), (100, 2.0, "2"),
    (101, 2.0043213737826426, "2.004321373782642574275188178222938"),
]
LN_CASES = [
    (1, 0.0, "0"), (2.5, 0.9162907318741551, "0.9162907318741550651835272117680110"),
    (7, 1.9459101490553132, "1.945910149055313305105352743443180"),
    (10, 2.302585092994046, "2.302585092994045684017991454684364"),
]
LOG10_LN = [("$log10", *c) for c in LOG10_CASES] + [("$ln", *c) for c in LN_CASES]


@pytest.mark.parametrize("op,x,dbl,_dec", LOG10_LN, ids=[f"{c[0]}({c[1]})" for c in LOG10_LN])
def test_log10_ln_non_decimal(one, op, x, dbl, _dec):
    """log_pow_exp.js: ``$log10``/``$ln`` of the double (and int32/long) forms is a close double."""
    plain, _ = _num_forms(x)
    for got in _eval_many(one, [{op: v} for v in plain]):
        assert_close(got, dbl)


@pytest.mark.parametrize(
    "op,x,_dbl,dec",
    LOG10_LN,
    ids=[f"{c[0]}({c[1]})" for c in LOG10_LN],
)
def test_log10_ln_decimal(one, op, x, _dbl, dec):
    """log_pow_exp.js: ``$log10``/``$ln`` of the decimal form is exactly the expected decimal."""
    _, decimal = _num_forms(x)
    assert_same(value_of(one, {op: decimal[0]}), D(dec))


DOUBLE_E = 2.7182818284590452
DECIMAL_E = D("2.718281828459045235360287471352662")
DECIMAL_1_OVER_E = D("0.3678794411714423215955237701614609")

LOG_MISC_CLOSE = [
    ({"$log": [10.0, 10.0]}, 1.0),
    ({"$log10": [10.0]}, 1.0),
    ({"$ln": [math.e]}, 1.0),
    ({"$ln": DOUBLE_E}, 1.0),
    ({"$ln": 1 / DOUBLE_E}, -1.0),
    ({"$log": [L(10), L(10)]}, 1.0),
    ({"$log10": [L(10)]}, 1.0),
    ({"$ln": [L(1)]}, 0.0),
    ({"$log": [L(9223372036854775807), 10.0]}, 18.964889726830812),
    ({"$exp": [-1]}, 1 / math.e),
    ({"$exp": [L(1)]}, math.e),
]


@pytest.mark.parametrize("expr,expected", LOG_MISC_CLOSE, ids=[str(e) for e, _ in LOG_MISC_CLOSE])
def test_log_exp_misc_doubles(one, expr, expected):
    """log_pow_exp.js: logs of doubles and longs (LLONG_MAX converted to double) and ``$exp`` of an
    int/long are doubles close to the expected value."""
    assert_close(value_of(one, expr), expected)


LOG_MISC_EXACT = [
    ({"$ln": DECIMAL_E}, D("0.9999999999999999999999999999999998")),
    ({"$ln": DECIMAL_1_OVER_E}, D("-0.9999999999999999999999999999999998")),
    ({"$log": [None, 10.0]}, None),
    ({"$log": [10.0, None]}, None),
    ({"$log": [None, D("10")]}, None),
    ({"$log": [D("10"), None]}, None),
    ({"$log10": [None]}, None),
    ({"$ln": [None]}, None),
    ({"$log": [NAN, 10.0]}, NAN),
    ({"$log": [10.0, NAN]}, NAN),
    ({"$log": [NAN, D("10")]}, NAN),
    ({"$log": [D("10"), NAN]}, NAN),
    ({"$log10": [NAN]}, NAN),
    ({"$ln": [NAN]}, NAN),
    ({"$exp": [D("-1")]}, DECIMAL_1_OVER_E),
    ({"$exp": [D("1")]}, DECIMAL_E),
    ({"$exp": [None]}, None),
    ({"$exp": [NAN]}, NAN),
]


@pytest.mark.parametrize("expr,expected", LOG_MISC_EXACT, ids=[str(e) for e, _ in rows(LOG_MISC_EXACT)])
def test_log_exp_misc_exact(one, expr, expected):
    """log_pow_exp.js: ``$ln`` of decimal e and 1/e, ``$exp`` of decimal ±1, and null/NaN
    propagation (a double NaN stays a double NaN even with a decimal operand in ``$log``)."""
    assert_same(value_of(one, expr), expected)


def test_log_of_field_paths(docs):
    """log_pow_exp.js: ``$log`` of two field paths (not constant-folded) works: log2(8) = 3."""
    assert_close(on_doc(docs, {"a": 8.0, "b": 2.0}, {"$log": ["$a", "$b"]}), 3.0)


LOG_ERRORS = [
    ({"$log": ["string", 5.0]}, (28756,)),
    ({"$log": [5.0, "string"]}, (28757,)),
    ({"$log10": ["string"]}, (28765, 4903700, 7157700)),
    ({"$ln": ["string"]}, (28765, 4903700, 7157700)),
    ({"$log": [0.0, 5.0]}, (28758,)),
    ({"$log": [5.0, 0.0]}, (28759,)),
    ({"$log10": [0.0]}, (28761, 4903708, 7157708)),
    ({"$ln": [0.0]}, (28766, 4903706, 7157706)),
    ({"$log": [D("0"), D("5")]}, (28758,)),
    ({"$log": [D("5"), D("0")]}, (28759,)),
    ({"$log10": [D("0")]}, (28761, 4903708, 7157708)),
    ({"$ln": [D("0")]}, (28766, 4903706, 7157706)),
    ({"$log": [-1.0, 5.0]}, (28758,)),
    ({"$log": [5.0, -1.0]}, (28759,)),
    ({"$log10": [-1.0]}, (28761, 4903708, 7157708)),
    ({"$ln": [-1.0]}, (28766, 4903706, 7157706)),
    ({"$log": [D("-1"), D("5")]}, (28758,)),
    ({"$log": [D("5"), D("-1")]}, (28759,)),
    ({"$log10": [D("-1")]}, (28761, 4903708, 7157708)),
    ({"$ln": [D("-1")]}, (28766, 4903706, 7157706)),
    ({"$log": [5.0, 1.0]}, (28759,)),
    ({"$log": [D("5"), D("1")]}, (28759,)),
    ({"$pow": [0.0, L(-1)]}, (28764,)),
    ({"$pow": ["string", 5.0]}, (28762,)),
    ({"$pow": [5.0, "string"]}, (28763,)),
    ({"$exp": ["string"]}, (28765, 4903700, 7157700)),
    ({"$pow": [D("0"), L(-1)]}, (28764,)),
    ({"$pow": ["string", D("5")]}, (28762,)),
]


@pytest.mark.parametrize("expr,codes", LOG_ERRORS, ids=[str(e) for e, _ in LOG_ERRORS])
def test_log_pow_exp_errors(one, expr, codes):
    """log_pow_exp.js: non-numeric arguments (28756/28757/28765/28762/28763), non-positive arguments
    or bases and base 1 (28758/28759/28761/28766), and 0 to a negative power (28764) fail."""
    aggregate_fails(one, [{"$project": {"r": expr}}], *codes)


POW_CASES = [
    ([10.0, 2.0], 100.0),
    ([0.5, -1.0], 2.0),
    ([-2.0, 2.0], 4.0),
    ([2, 2.0], 4.0),
    ([-2.0, 2], 4.0),
    ([D("10.0"), -2.0], D("0.01000000000000000000000000000000000")),
    ([0.5, D("-1")], D("2.000000000000000000000000000000000")),
    ([-2.0, D("2")], D("4.000000000000000000000000000000000")),
    ([2, D("2")], D("4.000000000000000000000000000000000")),
    ([D("-2.0"), 2], D("4.000000000000000000000000000000000")),
    ([D("10.0"), 2.0], D("100.0000000000000000000000000000000")),
    ([L(2), L(-1)], 0.5),
    ([4, -1], 0.25),
    ([4, L(-1)], 0.25),
    ([1, L(-2)], L(1)),
    ([-1, L(-2)], L(1)),
    ([L(-1), L(-3)], L(-1)),
    ([2, L(63)], 9223372036854775808.0),
    ([5, D("-112")], D("5192296858534827628530496329220096E-112")),
    ([3, 35], L(50031545098999707)),
    ([-2, L(63)], L(-9223372036854775808)),
    ([4, L(2)], L(16)),
    ([L(4), 2], L(16)),
    ([L(4), L(2)], L(16)),
    ([4, 2], 16),
    ([None, 2.0], None),
    ([0.5, None], None),
    ([None, D("2")], None),
    ([D("0.5"), None], None),
    ([NAN, 2.0], NAN),
    ([0.5, NAN], NAN),
    ([NAN, D("2")], D("NaN")),
    ([D("0.5"), NAN], D("NaN")),
]


@pytest.mark.parametrize("args,expected", POW_CASES, ids=[repr(a) for a, _ in rows(POW_CASES)])
def test_pow_types(one, args, expected):
    """log_pow_exp.js: ``$pow`` is a decimal if either side is decimal, else a double if either is a
    double or the exponent is negative (base not -1/0/1) or a long overflows; else a long if either
    is a long or an int overflows; else an int. Null gives null, NaN gives NaN."""
    assert_same(value_of(one, {"$pow": args}), expected)


# ==================================================================================================
# expression_trigonometric.js

TRIG_UNARY = ["$acos", "$acosh", "$asin", "$asinh", "$atan", "$atanh", "$cos", "$cosh", "$sin", "$sinh",
              "$tan", "$tanh", "$degreesToRadians", "$radiansToDegrees"]
_TRIG_ZERO_ARG = {"$acos": 1, "$acosh": 1}  # the others are evaluated at 0
_TRIG_ONE_RESULT = {"$cos", "$cosh"}


def _trig_expr(op: str, val):
    """The jstest puts the arguments in a document so that they are not constant-folded."""
    if isinstance(val, tuple):
        return {"y": val[0], "x": val[1]}, {op: ["$y", "$x"]}
    return {"y": val}, {op: "$y"}


def _trig_simple_cases():
    for kind, make in [("int", int), ("long", L), ("double", float)]:
        for op in TRIG_UNARY:
            yield op, make(_TRIG_ZERO_ARG.get(op, 0)), 1.0 if op in _TRIG_ONE_RESULT else 0.0, kind
        yield "$atan2", (make(0), make(1)), 0.0, kind
        yield "$atan2", (make(0), make(0)), 0.0, kind


TRIG_SIMPLE = list(_trig_simple_cases())


@pytest.mark.parametrize("op,val,expected,_kind", TRIG_SIMPLE, ids=[f"{c[0]}-{c[3]}" for c in TRIG_SIMPLE])
def test_trig_simple_numeric(docs, op, val, expected, _kind):
    """expression_trigonometric.js: each trigonometric expression of an int/long/double argument at
    its simple point is the double 0 (or 1 for cos/cosh)."""
    doc, expr = _trig_expr(op, val)
    assert_same(on_doc(docs, doc, expr), expected)


def _trig_decimal_cases():
    for op in TRIG_UNARY:
        yield op, D(str(_TRIG_ZERO_ARG.get(op, 0))), 1.0 if op in _TRIG_ONE_RESULT else 0.0
    yield "$atan2", (D("0"), 1.0), 0.0
    yield "$atan2", (D("0"), 0.0), 0.0
    # Infinity gives finite outputs (asymptotic bounds).
    yield "$atan", D("Infinity"), math.pi / 2
    yield "$atan", D("-Infinity"), -math.pi / 2
    yield "$atan2", (D("Infinity"), 0.0), math.pi / 2
    yield "$atan2", (D("-Infinity"), 0.0), -math.pi / 2
    yield "$atan2", (D("-Infinity"), D("Infinity")), -math.pi / 4
    yield "$atan2", (D("-Infinity"), D("-Infinity")), -3 * math.pi / 4
    yield "$atan2", (D("0"), D("-Infinity")), math.pi
    yield "$atan2", (D("0"), D("Infinity")), 0.0


TRIG_DECIMAL_APPROX = list(_trig_decimal_cases())


@pytest.mark.parametrize("op,val,expected", TRIG_DECIMAL_APPROX, ids=[f"{c[0]}({c[1]!r})" for c in TRIG_DECIMAL_APPROX])
def test_trig_decimal_approx(docs, op, val, expected):
    """expression_trigonometric.js: with a decimal argument the result is a decimal within 5e-8 of the
    expected value (including the finite limits at ±Infinity of atan/atan2)."""
    doc, expr = _trig_expr(op, val)
    got = on_doc(docs, doc, expr)
    assert isinstance(got, Decimal128), got
    assert abs(float(got.to_decimal()) - expected) < 5e-8, got


TRIG_DOUBLE_APPROX = [
    ("$atan", INF, math.pi / 2), ("$atan", -INF, -math.pi / 2),
    ("$atan2", (3, 2), 0.9827937232), ("$atan2", (621, 84), 1.4363466632),
]


@pytest.mark.parametrize("op,val,expected", TRIG_DOUBLE_APPROX, ids=[f"{c[0]}({c[1]!r})" for c in TRIG_DOUBLE_APPROX])
def test_trig_double_approx(docs, op, val, expected):
    """expression_trigonometric.js: atan(±Infinity) and atan2 of int32 pairs are doubles within 5e-8
    of the expected value."""
    doc, expr = _trig_expr(op, val)
    got = on_doc(docs, doc, expr)
    assert isinstance(got, float) and abs(got - expected) < 5e-8, got


def _trig_exact_cases():
    for op, val, out in [
        ("$acosh", D("Infinity"), D("Infinity")), ("$acosh", INF, INF),
        ("$asinh", D("Infinity"), D("Infinity")), ("$asinh", D("-Infinity"), D("-Infinity")),
        ("$asinh", INF, INF), ("$asinh", -INF, -INF),
        ("$cosh", D("Infinity"), D("Infinity")), ("$cosh", D("-Infinity"), D("Infinity")),
        ("$cosh", INF, INF), ("$cosh", -INF, INF),
        ("$sinh", D("Infinity"), D("Infinity")), ("$sinh", D("-Infinity"), D("-Infinity")),
        ("$sinh", INF, INF), ("$sinh", -INF, -INF),
        ("$tanh", D("Infinity"), D("1")), ("$tanh", D("-Infinity"), D("-1")),
        ("$atanh", D("1"), D("Infinity")), ("$atanh", D("-1"), D("-Infinity")),
        ("$atanh", 1.0, INF), ("$atanh", -1.0, -INF),
        ("$tanh", INF, 1.0), ("$tanh", -INF, -1.0),
    ]:
        yield op, val, out
    for op in ["$acos", "$asin", "$atan", "$cos", "$sin", "$tan"]:
        for name in (op, op + "h"):
            yield name, NAN, NAN
            yield name, D("NaN"), D("NaN")
    for op in ["$radiansToDegrees", "$degreesToRadians"]:
        for val, dec in ((NAN, "NaN"), (-INF, "-Infinity"), (INF, "Infinity")):
            yield op, val, val
            yield op, D(dec), D(dec)
    yield "$atan2", (D("NaN"), D("NaN")), D("NaN")
    yield "$atan2", (D("NaN"), D("0")), D("NaN")
    yield "$atan2", (D("0"), D("NaN")), D("NaN")


TRIG_EXACT = list(_trig_exact_cases())


@pytest.mark.parametrize("op,val,expected", TRIG_EXACT, ids=[f"{c[0]}({c[1]!r})" for c in TRIG_EXACT])
def test_trig_infinity_and_nan(docs, op, val, expected):
    """expression_trigonometric.js: infinite inputs giving infinite (or ±1) outputs, finite inputs
    giving infinite outputs (atanh(±1)), and NaN preserved, each in the input's type."""
    doc, expr = _trig_expr(op, val)
    assert_same(on_doc(docs, doc, expr), expected)


def _trig_error_cases():
    for op in ["$acos", "$asin", "$atanh", "$cos", "$sin", "$tan"]:
        for val in (-INF, D("-Infinity"), INF, D("Infinity")):
            yield op, val, 50989
    yield "$acosh", -INF, 50989
    yield "$acosh", D("-Infinity"), 50989
    for make in (int, L):
        for op, val in [("$acos", -2), ("$acos", 2), ("$asin", -2), ("$asin", 2), ("$acosh", 0),
                        ("$atanh", 2), ("$atanh", -2)]:
            yield op, make(val), 50989
    for op, val in [("$acos", -1.1), ("$acos", 1.1), ("$asin", -1.1), ("$asin", 1.1), ("$acosh", 0.9),
                    ("$atanh", -1.00001), ("$atanh", 1.00001)]:
        yield op, val, 50989
    # NumberDecimal(<double>) in the shell: the double rounded to 15 significant digits
    for op, val in [("$acos", "-1.10000000000000"), ("$acos", "1.10000000000000"),
                    ("$asin", "-1.10000000000000"), ("$asin", "1.10000000000000"),
                    ("$acosh", "0.900000000000000"), ("$atanh", "-1.00001000000000"),
                    ("$atanh", "1.00000100000000")]:
        yield op, D(val), 50989
    for op in TRIG_UNARY:
        yield op, "string", 28765
    yield "$atan2", ("string", "string"), 51044
    yield "$atan2", ("string", 0.0), 51044
    yield "$atan2", (0.0, "string"), 51045


TRIG_ERRORS = list(_trig_error_cases())
_TRIG_EQUIVALENT = {
    50989: (50989, 4995503, 7157803),
    28765: (28765, 4903700, 4903702, 4903703, 4903704, 4903705, 4903707, 4903709, 4822870, 4995501, 4995502,
            7157700, 7157702, 7157703, 7157704, 7157705, 7157707, 7157709, 7157800, 7157802),
    51044: (51044, 5688500, 7157801),
    51045: (51045, 5688500, 7157801),
}


@pytest.mark.parametrize("op,val,code", TRIG_ERRORS, ids=[f"{c[0]}({c[1]!r})" for c in TRIG_ERRORS])
def test_trig_errors(docs, op, val, code):
    """expression_trigonometric.js: arguments outside a function's domain (infinities, |x|>1 for
    acos/asin/atanh, x<1 for acosh) fail with 50989; non-numeric arguments with 28765 (atan2: 51044
    for the first, 51045 for the second)."""
    doc, expr = _trig_expr(op, val)
    fails_on_doc(docs, doc, expr, *_TRIG_EQUIVALENT[code])


# ==================================================================================================
# round_trunc.js

ROUND_TRUNC = [
    ({"$trunc": L(4)}, L(4)), ({"$trunc": NAN}, NAN), ({"$trunc": INF}, INF), ({"$trunc": -INF}, -INF),
    ({"$trunc": None}, None), ({"$trunc": -2.0}, -2.0), ({"$trunc": 0.9}, 0.0), ({"$trunc": -1.2}, -1.0),
    ({"$trunc": D("-1.6")}, D("-1")),
    ({"$round": L(4)}, L(4)), ({"$round": NAN}, NAN), ({"$round": INF}, INF), ({"$round": -INF}, -INF),
    ({"$round": None}, None), ({"$round": -2.0}, -2.0), ({"$round": 0.9}, 1.0), ({"$round": -1.2}, -1.0),
    ({"$round": D("-1.6")}, D("-2")),
    ({"$trunc": [1.298, 0.0]}, 1.0), ({"$trunc": [1.298, 1.0]}, 1.2), ({"$trunc": [23.298, -1.0]}, 20.0),
    ({"$trunc": [D("1.298"), 0.0]}, D("1")), ({"$trunc": [D("1.298"), 1.0]}, D("1.2")),
    ({"$trunc": [D("23.298"), -1.0]}, D("2E+1")), ({"$trunc": [1.298, 100.0]}, 1.298),
    ({"$trunc": [D("1.298912343250054252245154325"), L(20)]}, D("1.29891234325005425224")),
    ({"$trunc": [D("1.298"), D("100")]}, D("1.298000000000000000000000000000000")),
    ({"$round": [1.298, 0.0]}, 1.0), ({"$round": [1.298, 1.0]}, 1.3), ({"$round": [23.298, -1.0]}, 20.0),
    ({"$round": [D("1.298"), 0.0]}, D("1")), ({"$round": [D("1.298"), 1.0]}, D("1.3")),
    ({"$round": [D("23.298"), -1.0]}, D("2E+1")), ({"$round": [1.298, 100.0]}, 1.298),
    ({"$round": [D("1.298912343250054252245154325"), L(20)]}, D("1.29891234325005425225")),
    ({"$round": [D("1.298"), D("100")]}, D("1.298000000000000000000000000000000")),
    ({"$round": [2147483647, -1.0]}, L(2147483650)),
    ({"$round": [INF, 0.0]}, INF), ({"$round": [-INF, 0.0]}, -INF), ({"$round": [NAN, 0.0]}, NAN),
    ({"$round": [D("Infinity"), 0.0]}, D("Infinity")), ({"$round": [D("-Infinity"), 0.0]}, D("-Infinity")),
    ({"$round": [D("NaN"), 0.0]}, D("NaN")),
    ({"$trunc": [INF, 0.0]}, INF), ({"$trunc": [-INF, 0.0]}, -INF), ({"$trunc": [NAN, 0.0]}, NAN),
    ({"$trunc": [D("Infinity"), 0.0]}, D("Infinity")), ({"$trunc": [D("-Infinity"), 0.0]}, D("-Infinity")),
    ({"$trunc": [D("NaN"), 0.0]}, D("NaN")),
]


@pytest.mark.parametrize("expr,expected", ROUND_TRUNC, ids=[str(e) for e, _ in rows(ROUND_TRUNC)])
def test_round_trunc(one, expr, expected):
    """round_trunc.js: ``$round``/``$trunc`` with one and two arguments keep the input's type (an int
    rounding past int32 becomes a long), decimals rounded to the exact expected digits, NaN/±Infinity
    unchanged, null gives null."""
    assert_same(value_of(one, expr), expected)


ROUND_TRUNC_ERRORS = [({"$round": [L(9223372036854775806), -1.0]}, (51080, 5155302))]
ROUND_TRUNC_ERRORS += [({op: [1.0, 2.0, 3.0]}, (28667,)) for op in ("$trunc", "$round")]
ROUND_TRUNC_ERRORS += [({op: "string"}, (51081, 5155300)) for op in ("$round", "$trunc")]
ROUND_TRUNC_ERRORS += [
    ({op: [1.0, place]}, (51083, 5155301))
    for op in ("$round", "$trunc")
    for place in (L(101), L(-21), D("101"), D("-21"), 101, -21, 101.0, -21.0)
]
ROUND_TRUNC_ERRORS += [({"$round": [1.0, D("1.4")]}, (51082, 5155301)),
                       ({"$trunc": [1.0, 10.5]}, (51082, 5155301))]


@pytest.mark.parametrize("expr,codes", ROUND_TRUNC_ERRORS, ids=[str(e) for e, _ in rows(ROUND_TRUNC_ERRORS)])
def test_round_trunc_errors(one, expr, codes):
    """round_trunc.js: rounding a long past its range fails (51080), three arguments fail (28667), a
    non-numeric input fails (51081), a place outside [-20, 100] fails (51083) and a non-integral
    place fails (51082)."""
    aggregate_fails(one, [{"$project": {"a": expr}}], *codes)


# ==================================================================================================
# convert.js

OID = ObjectId("0123456789abcdef01234567")
CONVERSIONS = [
    (1.9, "double", 1.9), (1.9, "string", "1.9"), (1.9, "bool", True), (1.9, "date", ms(1)),
    (1.9, "int", 1), (1.9, "long", L(1)), (1.9, "decimal", D("1.90000000000000")),
    ("1.9", "double", 1.9), ("str", "string", "str"), ("0123456789abcdef01234567", "objectId", OID),
    ("", "bool", True), ("1970-01-01T00:00:00.001Z", "date", ms(1)), ("1", "int", 1), ("1", "long", L(1)),
    ("1.9", "decimal", D("1.9")),
    (OID, "string", "0123456789abcdef01234567"), (OID, "bool", True), (OID, "objectId", OID),
    (OID, "date", dt.datetime(1970, 8, 9, 22, 25, 43)),
    (False, "double", 0.0), (False, "string", "false"), (False, "bool", False), (False, "int", 0),
    (False, "long", L(0)), (False, "decimal", D("0")),
    (ms(123), "double", 123.0), (ms(123), "string", "1970-01-01T00:00:00.123Z"), (ms(123), "bool", True),
    (ms(123), "date", ms(123)), (ms(123), "long", L(123)), (ms(123), "decimal", D("123")),
    (1, "double", 1.0), (1, "string", "1"), (1, "bool", True), (1, "int", 1), (1, "long", L(1)),
    (1, "decimal", D("1")),
    (L(1), "double", 1.0), (L(1), "string", "1"), (L(1), "bool", True), (L(1), "date", ms(1)),
    (L(1), "int", 1), (L(1), "long", L(1)), (L(1), "decimal", D("1")),
    (D("1.9"), "double", 1.9), (D("1.9"), "string", "1.9"), (D("1.9"), "bool", True),
    (D("1.9"), "date", ms(1)), (D("1.9"), "int", 1), (D("1.9"), "long", L(1)), (D("1.9"), "decimal", D("1.9")),
    (MinKey(), "bool", True), ({"foo": 1.0, "bar": 2.0}, "bool", True), ([1.0, 2.0], "bool", True),
    (Binary(base64.b64decode("B" * 28), 0), "bool", True),
    (Regex("B*"), "bool", True), (DBRef("db.test", "oid"), "bool", True), (Code("function() {}"), "bool", True),
    (Timestamp(0, 1), "bool", True),
]
_SHORTHAND = {"double": "$toDouble", "string": "$toString", "objectId": "$toObjectId", "bool": "$toBool",
              "date": "$toDate", "int": "$toInt", "long": "$toLong", "decimal": "$toDecimal"}


@pytest.mark.parametrize("form", ["$convert", "shorthand"])
@pytest.mark.parametrize(
    "value,target,expected", CONVERSIONS,
    ids=[f"{type(v).__name__}->{t}-{i}" for i, (v, t, _) in enumerate(rows(CONVERSIONS))]
)
def test_convert_supported(docs, value, target, expected, form):
    """convert.js: each supported conversion (``$convert`` with ``to`` from a field, and the
    ``$toDouble``/``$toString``/... shorthands) gives the expected value, of the target type."""
    if form == "$convert":
        expr = {"$convert": {"to": "$target", "input": "$input"}}
    else:
        expr = {_SHORTHAND[target]: "$input"}
    got, got_type = on_doc_many(docs, {"input": value, "target": target}, [expr, {"$type": expr}])
    assert_same(got, expected)
    assert_same(got_type, target)


def test_convert_on_error_does_not_catch_input_errors(one):
    """convert.js: ``onError`` covers the conversion only: an error evaluating ``input`` (a division
    by zero) still fails the aggregation."""
    aggregate_fails(one, [{"$project": {"o": {"$convert": {"to": "string", "input": {"$divide": [1, 0]},
                                                        "onError": "ERROR"}}}}])


ILLEGAL_CONVERSIONS = [
    (1.9, "objectId"), (OID, "double"), (OID, "int"), (OID, "long"), (OID, "decimal"),
    (False, "objectId"), (False, "date"), (ms(123), "objectId"), (ms(123), "int"),
    (1, "objectId"), (1, "date"), (L(1), "objectId"), (D("1.9"), "objectId"),
] + [(1.9, t)
      for t in ["minKey", "missing", "object", "array", "binData", "undefined", "null", "regex", "dbPointer",
                "javascript", "symbol", "javascriptWithScope", "timestamp", "maxKey"]]


@pytest.mark.parametrize("value,target", ILLEGAL_CONVERSIONS,
                         ids=[f"{type(v).__name__}->{t}" for v, t in rows(ILLEGAL_CONVERSIONS)])
def test_convert_unsupported(db, value, target):
    """convert.js: an unsupported conversion fails; with ``onError`` it gives that value, and with
    ``onError: "$$REMOVE"`` the output field is left out."""
    db.c.insert_one({"_id": 0, "input": value, "target": target})
    aggregate_fails(db.c, [{"$project": {"output": {"$convert": {"to": "$target", "input": "$input"}}}}])
    out = run_agg(db.c, [{"$project": {"output": {"$convert": {"to": "$target", "input": "$input",
                                                                   "onError": "ERROR"}}}}])
    assert_same(out, [{"_id": 0, "output": "ERROR"}])
    out = run_agg(db.c, [{"$project": {"_id": False, "output": {
        "$convert": {"to": "$target", "input": "$input", "onError": "$$REMOVE"}}}}])
    assert_same(out, [{}])


@pytest.mark.parametrize("to", ["int", None], ids=["to-int", "to-null"])
def test_convert_nullish_input_gives_on_null(db, to):
    """convert.js: a null, undefined or missing input gives ``onNull``, even when ``to`` is null."""
    db.c.insert_many([raw({"_id": 0, "input": None}), raw({"_id": 1, "input": UNDEFINED}), {"_id": 2}])
    out = run_agg(db.c, [{"$project": {"output": {"$convert": {"to": to, "input": "$input", "onNull": "NULL"}}}},
                               {"$sort": {"_id": 1}}])
    assert_same(out, [{"_id": i, "output": "NULL"} for i in range(3)])


# ==================================================================================================
# is_number.js

FIXED_UUID = uuid.UUID("0f8fad5b-d9cb-469f-a165-70867728950e")  # a UUID() as the shell makes (BinData 4)
IS_NUMBER_DOCS = [
    ({"f": 56072}, "$f", True), ({"n": {"v": 500}}, "$n.v", True),
    ({"f": 56072.2}, "$f", True), ({"n": {"v": 56072.2}}, "$n.v", True),
    ({"f": D("1.234")}, "$f", True), ({"n": {"v": D("1.234")}}, "$n.v", True),
    ({"f": L(123456789)}, "$f", True), ({"n": {"v": L(123456789)}}, "$n.v", True),
    ({"f": None}, "$f", False), ({"n": {"w": None}}, "$n.v", False),
    ({}, "$f", False), ({"n": {}}, "$n.v", False),
    ({"f": [1.0]}, "$f", False), ({"n": {"w": [1.0]}}, "$n.v", False),
    ({"f": "1234"}, "$f", False), ({"n": {"w": "12345"}}, "$n.v", False),
    ({"f": dt.datetime(2020, 1, 2)}, "$f", False), ({"n": {"w": dt.datetime(2020, 1, 2)}}, "$n.v", False),
    ({"f": Binary.from_uuid(FIXED_UUID)}, "$f", False),
    ({"n": {"w": Binary.from_uuid(FIXED_UUID)}}, "$n.v", False),
]


@pytest.mark.parametrize("doc,path,expected", IS_NUMBER_DOCS, ids=[f"{d}-{p}" for d, p, _ in IS_NUMBER_DOCS])
def test_is_number_of_fields(docs, doc, path, expected):
    """is_number.js: ``$isNumber`` of a (nested) field is true for int/double/decimal/long and false
    for null, missing, arrays, strings, dates and BinData."""
    assert_same(on_doc(docs, doc, {"$isNumber": path}), expected)


IS_NUMBER_LITERALS = [
    (L(12345678), True), (D("1.2345678"), True), (18, True), (5.34, True), (None, False), ([[2.0]], False),
    ("a literal string", False), (dt.datetime(2020, 1, 2), False), (Binary.from_uuid(FIXED_UUID), False),
]


@pytest.mark.parametrize("arg,expected", IS_NUMBER_LITERALS, ids=[repr(a)[:30] for a, _ in IS_NUMBER_LITERALS])
def test_is_number_of_literals(one, arg, expected):
    """is_number.js: ``$isNumber`` of literal numbers is true, of null/array/string/date/BinData
    literals false."""
    assert_same(value_of(one, {"$isNumber": arg}), expected)


# ==================================================================================================
