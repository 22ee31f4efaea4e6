"""Pure parts of geo, text and hashed indexes (no server)."""

from __future__ import annotations

import datetime

import pytest
from bson.binary import Binary
from bson.code import Code
from bson.int64 import Int64
from bson.max_key import MaxKey
from bson.min_key import MinKey
from bson.objectid import ObjectId
from bson.regex import Regex

from tidemark.protocol.errors import MongoError
from tidemark.query.docmeta import DocMeta, mentions_meta
from tidemark.query.geo_keys import Plane, cap_region, region_intervals, sphere_keys
from tidemark.query.geo_parse import parse_geojson, sphere_point
from tidemark.query.geo_query import parse_near, parse_within
from tidemark.query.hashed import hash64
from tidemark.query.pipeline import PipelineContext, run_pipeline
from tidemark.query.text_index import normalize_text_spec
from tidemark.query.text_lang import tokens, words
from tidemark.query.text_search import TextMatcher, _split, parse_text


def test_hash64_is_mongods_function():
    assert hash64(42) == -944302157085130861  # mongod's start-up self check
    assert hash64(42.7) == hash64(42) == hash64(True and 42)
    assert hash64("a") != hash64("b")


@pytest.mark.parametrize(("value", "expected"), [
    # mongod's BSONElementHasher test vectors (src/mongo/db/hasher_test.cpp)
    (Int64(2**63 - 1), 921523596458303250),
    (None, 2338878944348059895),
    (MinKey(), 7961148599568647290),
    (MaxKey(), 5504842513779440750),
    ("abc", 8478485326885698097),
    ({"a": "abc", "b": Int64(123)}, 4771603801758380216),
    ({}, 7980500913326740417),
    (["bar", "baz", "qux"], -2938911267422831539),
    ([], 8849948234993459283),
    (Binary(bytes([0, 1, 2, 3, 4, 6]), 0), 7252465090394235301),
    (ObjectId("010203040506070809101112"), -5588663249627035708),
    (True, 6405873908747105701),
    (datetime.datetime(1970, 1, 1), -1178696894582842035),
    (Regex(".*", "i"), 7095855029187981886),
    (Code("func f() { return 1; }"), 6861638109178014270),
    (Code("func f() { return 1; }", {"c": True}), 501342939894575968),
])
def test_hash64_matches_mongods_test_vectors(value, expected):
    assert hash64(value) == expected


def test_a_points_cell_key_lies_in_the_intervals_of_a_cap_around_it():
    (key,) = sphere_keys({"type": "Point", "coordinates": [2.35, 48.85]}, {})
    intervals = region_intervals(cap_region(sphere_point(2.36, 48.86), 0.001))
    assert any(lo <= key <= hi for lo, hi in intervals)
    far = region_intervals(cap_region(sphere_point(-70, -30), 0.001))
    assert not any(lo <= key <= hi for lo, hi in far)


def test_a_polygons_covering_cells_meet_a_query_inside_it():
    keys = sphere_keys({"type": "Polygon", "coordinates": [[[0, 0], [5, 0], [5, 5], [0, 5], [0, 0]]]}, {})
    intervals = region_intervals(cap_region(sphere_point(2.5, 2.5), 1e-5))
    assert any(lo <= k <= hi for k in keys for lo, hi in intervals)


def test_geohash_box_cover_contains_the_points_inside():
    plane = Plane({})
    intervals = plane.box_intervals(10, 10, 20, 20)
    assert any(lo <= plane.hash(15, 12) <= hi for lo, hi in intervals)
    assert not any(lo <= plane.hash(-50, 12) <= hi for lo, hi in intervals)


@pytest.mark.parametrize("geo, message", [
    ({"type": "Point", "coordinates": [0]}, "Point must only contain numeric elements"),
    ({"type": "Point", "coordinates": [0, 91]}, "longitude/latitude is out of bounds"),
    ({"type": "LineString", "coordinates": [[0, 0]]}, "at least 2 vertices"),
    ({"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1]]]}, "Loop is not closed"),
    ({"type": "Polygon", "coordinates": [[[0, 0], [2, 2], [2, 0], [0, 2], [0, 0]]]}, "Loop is not valid"),
    ({"type": "GeometryCollection", "geometries": []}, "at least 1 element"),
])
def test_geojson_validation_messages(geo, message):
    with pytest.raises(MongoError) as e:
        parse_geojson(geo)
    assert e.value.code == 2 and message in e.value.message


def test_clockwise_polygon_means_the_smaller_region_unless_strict_winding():
    ring = [[0, 0], [0, 10], [10, 10], [10, 0], [0, 0]]  # clockwise
    small = parse_within({"$geometry": {"type": "Polygon", "coordinates": [ring]}})
    assert small.contains(parse_geojson({"type": "Point", "coordinates": [5, 5]}))
    big = parse_within({"$geometry": {"type": "Polygon", "coordinates": [ring], "crs": {
        "type": "name", "properties": {"name": "urn:x-mongodb:crs:strictwinding:EPSG:4326"}}}})
    assert not big.contains(parse_geojson({"type": "Point", "coordinates": [5, 5]}))
    assert big.contains(parse_geojson({"type": "Point", "coordinates": [50, 50]}))


def test_near_units():
    geo = parse_near("$near", {"$geometry": {"type": "Point", "coordinates": [0, 0]}, "$maxDistance": 10}, {})
    assert geo.geojson and geo.spherical and geo.max_distance == 10
    legacy = parse_near("$near", [1, 2], {"$maxDistance": 3})
    assert not legacy.spherical and legacy.max_distance == 3
    sphere = parse_near("$nearSphere", [1, 2], {})
    assert sphere.spherical and not sphere.geojson


def test_tokenizer_follows_mongods_rules():
    assert list(tokens("Don't stop-running, cafés!", "english")) == ["stop", "run", "cafe"]  # don't: stop word
    assert list(tokens("L'été est chaud", "french")) == ["chaud"]  # l, été, est: French stop words
    assert words("aujourd'hui", "french") == ["aujourd", "hui"] and words("don't", "english") == ["don't"]
    assert list(tokens("Running", "none")) == ["running"]
    assert list(tokens("Café", "english", case_sensitive=True, diacritic_sensitive=True)) == ["Café"]


def test_search_string_parsing():
    assert _split('coffee -cake "hot drink" -"bad thing" a-b -c-d') == (
        ["coffee", "hot", "drink", "a", "b"], ["cake", "c", "d"], ["hot drink"], ["bad thing"])
    assert _split("- coffee") == (["coffee"], [], [], [])  # a lone '-' negates nothing


def test_text_score_formula_by_hand():
    spec = normalize_text_spec({"weights": {"a": 2}}, {"a": "text", "b": "text"})
    m = TextMatcher(parse_text({"$search": "dogs"}), spec)
    # a: [dog, dog, cat] -> freq 1.5, coeff 0.5*2/3+0.5 -> 2 x 1.5 x 0.8333; b: [dog] whole field "dog" -> 1.1
    doc = {"a": "dog dogs cat", "b": "dog"}
    assert m.matches(doc)
    assert m.score(doc) == pytest.approx(2 * 1.5 * (0.5 * 2 / 3 + 0.5) + 1.1)


def test_meta_travels_through_one_to_one_stages_only():
    meta = DocMeta()
    docs = [{"_id": i} for i in range(3)]
    for i, d in enumerate(docs):
        meta.set(d, "textScore", float(i))
    ctx = PipelineContext(variables={"__docmeta": meta})
    out = list(run_pipeline([{"$addFields": {"x": 1}}, {"$project": {"s": {"$meta": "textScore"}}},
                             {"$sort": {"s": -1}}], iter(docs), ctx))
    assert [d["s"] for d in out] == [2.0, 1.0, 0.0]
    assert mentions_meta([{"$project": {"a": {"$meta": "textScore"}}}]) and not mentions_meta({"a": 1})


def test_graph_lookup_memory_limit_is_40099():
    foreign = [{"_id": i, "name": i, "next": i + 1, "pad": "x" * 200} for i in range(50)]
    ctx = PipelineContext(resolve_collection=lambda db, coll: iter(foreign), memory_limit=2000, db="d")
    with pytest.raises(MongoError) as e:
        list(run_pipeline([{"$graphLookup": {"from": "f", "startWith": 0, "connectFromField": "next",
                                             "connectToField": "name", "as": "all"}}], iter([{"_id": "x"}]), ctx))
    assert e.value.code == 40099
