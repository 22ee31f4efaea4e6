"""The pure checks behind the catalog commands (server/commands/ddl.py): which special query features a
listCollections / listDatabases filter may use, the filter that lists collections only (mongod then
skips the view catalog), and ``create``'s ``idIndex`` and ``temp`` options (mongod 7.0's codes)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tidemark.commands.ddl import (
    _is_collections_only,
    check_catalog_filter,
    id_index_version,
    parse_create_options,
)
from tidemark.protocol.errors import MongoError

BAD_VALUE = 2

_BANNED_LEAVES = [
    {"$text": {"$search": "x"}},
    {"$where": "true"},
    {"a": {"$near": [0, 0]}},
    {"a": {"$nearSphere": {"$geometry": {"type": "Point", "coordinates": [0, 0]}}}},
    {"a": {"$geoNear": [0, 0]}},
    {"a": {"$elemMatch": {"$where": "true"}}},
    {"a": {"$not": {"$near": [0, 0]}}},
]
_ALLOWED_LEAVES = [
    {"name": "x"},
    {"$expr": {"$eq": ["$name", "x"]}},
    {"$jsonSchema": {"required": ["name"]}},
    {"a": {"$geoWithin": {"$center": [[0, 0], 1]}}},
    {"a": {"$elemMatch": {"b": 1}}},
    {"options.temp": True},
]


def _wrapped(leaf: st.SearchStrategy) -> st.SearchStrategy:
    """``leaf`` nested in any mix of $and / $or / $nor, beside allowed siblings."""
    return st.recursive(
        leaf,
        lambda inner: st.builds(lambda op, child, siblings: {op: [*siblings, child]},
                                st.sampled_from(["$and", "$or", "$nor"]), inner,
                                st.lists(st.sampled_from(_ALLOWED_LEAVES), max_size=2)),
        max_leaves=4,
    )


@given(_wrapped(st.sampled_from(_BANNED_LEAVES)))
def test_a_banned_feature_anywhere_in_the_filter_is_bad_value(flt):
    with pytest.raises(MongoError) as info:
        check_catalog_filter(flt)
    assert info.value.code == BAD_VALUE
    assert info.value.message.endswith("is not allowed in this context") or "are not allowed" in info.value.message


@given(_wrapped(st.sampled_from(_ALLOWED_LEAVES)))
def test_expr_json_schema_and_plain_predicates_are_allowed(flt):
    check_catalog_filter(flt)


@pytest.mark.parametrize("flt, expected", [
    ({"$or": [{"type": "collection"}, {"type": {"$exists": False}}]}, True),
    ({"$or": [{"type": {"$exists": False}}, {"type": "collection"}]}, False),
    ({"$or": [{"type": "collection"}, {"type": {"$exists": 0}}]}, False),
    ({"type": "collection"}, False),
    ({"$or": [{"type": "collection"}, {"type": {"$exists": False}}], "name": "a"}, False),
    (None, False),
])
def test_only_the_drivers_collections_filter_skips_views(flt, expected):
    assert _is_collections_only(flt) is expected


@pytest.mark.parametrize("id_index, code", [
    (1, 14),
    ({}, 9),
    ({"key": {"_id": 1}}, 9),
    ({"name": "_id_"}, 9),
    ({"key": {"_id": 1}, "name": "_id_", "sparse": True}, 197),
    ({"key": {"_id": 1}, "name": "_id_", "unique": True}, 197),
    ({"key": {"a": 1}, "name": "_id_"}, BAD_VALUE),
    ({"key": {"_id": -1}, "name": "_id_"}, BAD_VALUE),
    ({"key": {"_id": 1}, "name": "_id_", "collation": {"locale": "en_US"}}, BAD_VALUE),
])
def test_an_invalid_id_index_is_refused(id_index, code):
    with pytest.raises(MongoError) as info:
        parse_create_options({"create": "c", "idIndex": id_index}, "c")
    assert info.value.code == code


@pytest.mark.parametrize("collection, id_collation, ok", [
    ({"locale": "fr_CA"}, {"locale": "en_US"}, False),
    ({"locale": "fr_CA"}, {"locale": "simple"}, False),
    ({"locale": "en_US", "strength": 3}, {"locale": "en_US"}, True),
    ({"locale": "simple"}, {"locale": "simple"}, True),
])
def test_id_index_collation_must_equal_the_collection_default(collection, id_collation, ok):
    cmd = {"create": "c", "collation": collection,
           "idIndex": {"key": {"_id": 1}, "name": "_id_", "collation": id_collation}}
    if ok:
        assert "idIndex" not in parse_create_options(cmd, "c")
    else:
        with pytest.raises(MongoError) as info:
            parse_create_options(cmd, "c")
        assert info.value.code == BAD_VALUE


@pytest.mark.parametrize("id_index, version", [
    ({"key": {"_id": 1}, "name": "_id_"}, None),
    ({"key": {"_id": 1}, "name": "_id_", "v": 1}, 1),
    ({"key": {"_id": 1}, "name": "_id_", "v": 2.0}, 2),
])
def test_id_index_version(id_index, version):
    assert id_index_version({"idIndex": id_index}) == version


@pytest.mark.parametrize("temp, listed", [(True, True), (1, True), (False, False), (0, False)])
def test_a_true_temp_is_kept_as_true(temp, listed):
    options = parse_create_options({"create": "c", "temp": temp}, "c")
    assert options == ({"temp": True} if listed else {})
