"""The pure checks behind ``create``'s engine options, its ``_id`` index decision and the stats
``scale`` (server/commands/ddl.py, server/coll_stats.py), against mongod 7.0's rules: the create IDL
(``storageEngine`` a document; ``indexOptionDefaults`` a strict struct of ``storageEngine``), then
createCollection's validateStorageOptions (each engine registered, its options a document);
requiresIdIndex / autoIndexId; ``BSONElement::safeNumberInt`` for a ``safeInt`` scale."""

import math

import pytest
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from hypothesis import given
from hypothesis import strategies as st

from tidemark.arguments import safe_number_int, scale_arg
from tidemark.commands.ddl import AUTO_INDEX_ID_NOTE, STORAGE_ENGINES, _builds_id_index, parse_create_options
from tidemark.protocol.errors import MongoError

BAD_VALUE, TYPE_MISMATCH, INVALID_OPTIONS, UNKNOWN_FIELD = 2, 14, 72, 40415
INT32_MAX = 2**31 - 1

_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=3), st.floats(allow_nan=False))
_ENGINE_NAMES = st.sampled_from([*sorted(STORAGE_ENGINES), "unknownStorageEngine", "inMemory"])
_ENGINE_OPTIONS = st.one_of(st.dictionaries(st.text(max_size=3), _SCALARS, max_size=2), _SCALARS)
_ENGINES = st.one_of(st.dictionaries(_ENGINE_NAMES, _ENGINE_OPTIONS, max_size=3), _SCALARS)
_INDEX_DEFAULTS = st.one_of(
    st.dictionaries(st.sampled_from(["storageEngine", "unknownOption"]), _ENGINES, max_size=2), _SCALARS)


def _engine_errors(engines: dict) -> int | None:
    """The code validateStorageOptions answers for a document of engines (None: valid)."""
    for name, options in engines.items():
        if not isinstance(options, dict):
            return BAD_VALUE
        if name not in STORAGE_ENGINES:
            return INVALID_OPTIONS
    return None


def _expected(cmd: dict) -> int | None:
    """mongod 7.0's code for a create of these engine options, IDL first, in field order."""
    for key, value in cmd.items():
        if key == "storageEngine" and not isinstance(value, dict):
            return TYPE_MISMATCH
        if key == "indexOptionDefaults":
            if not isinstance(value, dict):
                return TYPE_MISMATCH
            for field, engines in value.items():
                if field != "storageEngine":
                    return UNKNOWN_FIELD
                if not isinstance(engines, dict):
                    return TYPE_MISMATCH
                if any(not isinstance(v, dict) for v in engines.values()):
                    return BAD_VALUE
    for engines in (cmd.get("storageEngine"), (cmd.get("indexOptionDefaults") or {}).get("storageEngine")):
        code = _engine_errors(engines or {})
        if code is not None:
            return code
    return None


@given(st.fixed_dictionaries({}, optional={"storageEngine": _ENGINES, "indexOptionDefaults": _INDEX_DEFAULTS}))
def test_engine_options_are_checked_like_mongod(extra):
    cmd = {"create": "c", **extra}
    expected = _expected(cmd)
    if expected is None:
        options = parse_create_options(dict(cmd), "c")
        assert {k: options[k] for k in extra} == extra  # kept as given (listCollections shows them)
    else:
        with pytest.raises(MongoError) as info:
            parse_create_options(dict(cmd), "c")
        assert info.value.code == expected


@pytest.mark.parametrize("extra, code, message", [
    ({"storageEngine": "x"}, TYPE_MISMATCH,
     "BSON field 'create.storageEngine' is the wrong type 'string', expected type 'object'"),
    ({"storageEngine": {"unknownStorageEngine": {}}}, INVALID_OPTIONS,
     "unknownStorageEngine is not a registered storage engine for this server"),
    ({"storageEngine": {"lmdb": 12345}}, BAD_VALUE, "'storageEngine.lmdb' has to be an embedded document."),
    ({"indexOptionDefaults": "x"}, TYPE_MISMATCH,
     "BSON field 'create.indexOptionDefaults' is the wrong type 'string', expected type 'object'"),
    ({"indexOptionDefaults": {"unknownOption": True}}, UNKNOWN_FIELD,
     "BSON field 'create.indexOptionDefaults.unknownOption' is an unknown field."),
    ({"indexOptionDefaults": {"storageEngine": {"lmdb": 1}}}, BAD_VALUE,
     "'storageEngine.lmdb' must be an embedded document"),
    ({"indexOptionDefaults": {"storageEngine": {"unknownStorageEngine": {}}}}, INVALID_OPTIONS,
     "unknownStorageEngine is not a registered storage engine for this server"),
])
def test_engine_option_messages(extra, code, message):
    with pytest.raises(MongoError) as info:
        parse_create_options({"create": "c", **extra}, "c")
    assert (info.value.code, info.value.message) == (code, message)


def test_auto_index_id_is_kept_after_the_capped_fields():
    options = parse_create_options({"create": "c", "autoIndexId": 0, "capped": True, "size": 4096, "temp": True},
                                   "c")
    assert list(options) == ["capped", "size", "autoIndexId", "temp"] and options["autoIndexId"] is False
    assert AUTO_INDEX_ID_NOTE.startswith("The autoIndexId option is deprecated")


def test_id_index_is_refused_with_auto_index_id():
    with pytest.raises(MongoError) as info:
        parse_create_options({"create": "c", "autoIndexId": True, "idIndex": {"key": {"_id": 1}, "name": "_id_"}}, "c")
    assert info.value.code == INVALID_OPTIONS and "'idIndex' is not allowed with 'autoIndexId'" in info.value.message


@pytest.mark.parametrize("db, name, options, builds", [
    ("d", "c", {}, True),
    ("d", "c", {"autoIndexId": True}, True),
    ("local", "c", {"autoIndexId": False}, False),
    ("d", "system.profile", {}, False),  # requiresIdIndex: the profiler's entries have no _id
    ("d", "system.profile", {"autoIndexId": True}, False),
    ("local", "system.profile", {"autoIndexId": False}, False),
])
def test_which_collections_get_an_id_index(db, name, options, builds):
    assert _builds_id_index(db, name, options) is builds


def test_auto_index_id_false_needs_an_unreplicated_namespace():
    with pytest.raises(MongoError) as info:
        _builds_id_index("d", "c", {"autoIndexId": False})
    assert (info.value.code, info.value.message) == (
        50001, "autoIndexId:false is not allowed for collection d.c because it can be replicated")


# --------------------------------------------------------------------------------------------------
# the stats scale: any number a client sends


def _model(value) -> int:
    """safeNumberInt by exact arithmetic: NaN 0, toward zero (a decimal half to even), clamped."""
    if isinstance(value, Decimal128):
        d = value.to_decimal()
        if d.is_nan():
            return 0
        n = int(d.to_integral_value()) if d.is_finite() else (2**63 if d > 0 else -(2**63))
    elif isinstance(value, float):
        if math.isnan(value):
            return 0
        n = int(value) if math.isfinite(value) else (2**63 if value > 0 else -(2**63))
    else:
        n = int(value)
    return min(max(n, -(2**31)), INT32_MAX)


_NUMBERS = st.one_of(
    st.integers(-(2**70), 2**70).map(lambda n: Int64(n) if -(2**63) <= n < 2**63 else n),
    st.floats(),
    st.decimals(min_value=-(10**25), max_value=10**25, places=2).map(lambda d: Decimal128(str(d))),
    st.sampled_from(["NaN", "Infinity", "-Infinity", "2.5", "1.5", "0.5", "9.9E+40", "-9.9E+40"]).map(Decimal128),
)


@given(_NUMBERS)
def test_any_numeric_scale_is_a_positive_int_or_bad_value(value):
    expected = _model(value)
    assert safe_number_int(value) == expected
    if expected >= 1:
        assert scale_arg({"scale": value}) == expected
    else:
        with pytest.raises(MongoError) as info:
            scale_arg({"scale": value})
        assert info.value.code == BAD_VALUE


def test_the_largest_double_scale_is_the_largest_int():
    assert scale_arg({"scale": 1.7976931348623157e308}) == INT32_MAX
    assert scale_arg({}) == 1


@pytest.mark.parametrize("value", ["1", True, [1], {"a": 1}])
def test_a_non_numeric_scale_is_bad_value(value):
    with pytest.raises(MongoError) as info:
        scale_arg({"scale": value})
    assert info.value.code == BAD_VALUE
