"""Geospatial and text search from mongosh, as the documentation's examples run them.

Distances are checked against geographiclib on mongod's sphere (6378.1 km); text results against
hand-built expectations."""

from __future__ import annotations

import pytest
from geographiclib.geodesic import Geodesic

pytestmark = [pytest.mark.clients, pytest.mark.commands("createIndexes", "insert", "find", "aggregate")]

SPHERE = Geodesic(6378100.0, 0.0)

PLACES = [("Central Park", -73.97, 40.77), ("Sara D. Roosevelt Park", -73.9928, 40.7193),
          ("Polo Grounds", -73.9375, 40.8303), ("Brooklyn Bridge", -73.9969, 40.7061)]


def _metres(a, b):
    return SPHERE.Inverse(a[1], a[0], b[1], b[0])["s12"]


@pytest.mark.slow
def test_mongosh_near_geo_near_and_geo_within(mongosh):
    docs = ", ".join(f"{{name: '{n}', location: {{type: 'Point', coordinates: [{x}, {y}]}}}}" for n, x, y in PLACES)
    result = mongosh(f"""
      const d = db.getSiblingDB('geo_mongosh');
      d.dropDatabase();
      d.places.insertMany([{docs}]);
      d.places.createIndex({{location: '2dsphere'}});
      ({{
        near: d.places.find({{location: {{$near: {{$geometry: {{type: 'Point', coordinates: [-73.9667, 40.78]}},
                                                   $maxDistance: 10000}}}}}}).toArray().map(p => p.name),
        geoNear: d.places.aggregate([{{$geoNear: {{near: {{type: 'Point', coordinates: [-73.99279, 40.719296]}},
                                                    distanceField: 'dist.calculated', maxDistance: 3000,
                                                    includeLocs: 'dist.location'}}}}]).toArray(),
        within: d.places.find({{location: {{$geoWithin: {{$centerSphere: [[-73.98, 40.75], 5 / 3963.2]}}}}}})
                  .toArray().map(p => p.name).sort(),
        indexes: d.places.getIndexes().map(i => i.name)
      }})
    """)
    q1 = (-73.9667, 40.78)
    expected = sorted((p for p in PLACES if _metres(q1, p[1:]) <= 10000), key=lambda p: _metres(q1, p[1:]))
    assert result["near"] == [p[0] for p in expected]
    q2 = (-73.99279, 40.719296)
    rows = result["geoNear"]
    expected = sorted((p for p in PLACES if _metres(q2, p[1:]) <= 3000), key=lambda p: _metres(q2, p[1:]))
    assert [r["name"] for r in rows] == [p[0] for p in expected]
    for r, p in zip(rows, expected, strict=True):
        assert r["dist"]["calculated"] == pytest.approx(_metres(q2, p[1:]), rel=1e-9)
        assert r["dist"]["location"]["coordinates"] == [p[1], p[2]]
    q3, radius = (-73.98, 40.75), 5 / 3963.2
    assert result["within"] == sorted(p[0] for p in PLACES if _metres(q3, p[1:]) / 6378100.0 <= radius)
    assert "location_2dsphere" in result["indexes"]


@pytest.mark.slow
def test_mongosh_text_search_with_scores(mongosh):
    result = mongosh("""
      const d = db.getSiblingDB('text_mongosh');
      d.dropDatabase();
      d.stores.insertMany([
        {_id: 1, name: 'Java Hut', description: 'Coffee and cakes'},
        {_id: 2, name: 'Burger Buns', description: 'Gourmet hamburgers'},
        {_id: 3, name: 'Coffee Shop', description: 'Just coffee'},
        {_id: 4, name: 'Clothes Clothes Clothes', description: 'Discount clothing'},
        {_id: 5, name: 'Java Shopping', description: 'Indonesian goods'}
      ]);
      d.stores.createIndex({name: 'text', description: 'text'});
      ({
        any: d.stores.find({$text: {$search: 'java coffee shop'}}).toArray().map(s => s._id).sort(),
        phrase: d.stores.find({$text: {$search: '"coffee shop"'}}).toArray().map(s => s._id),
        neg: d.stores.find({$text: {$search: 'java shop -coffee'}}).toArray().map(s => s._id).sort(),
        scored: d.stores.find({$text: {$search: 'java coffee shop'}}, {score: {$meta: 'textScore'}})
                  .sort({score: {$meta: 'textScore'}}).toArray().map(s => [s._id, s.score])
      })
    """)
    assert result["any"] == [1, 3, 5]
    assert result["phrase"] == [3]
    assert result["neg"] == [5]
    # by hand: doc 3 name [coffe, shop] -> 0.75 + 0.75, description [just, coffe] -> 0.75; 2.25
    # doc 1 name [java, hut] -> 0.75; description [coffe, cake] -> 0.75; 1.5
    # doc 5 name [java, shop] -> 0.75 + 0.75 (shopping -> shop); 1.5
    ids = [row[0] for row in result["scored"]]
    scores = {row[0]: row[1] for row in result["scored"]}
    assert ids[0] == 3 and set(ids) == {1, 3, 5}
    assert scores == pytest.approx({3: 2.25, 1: 1.5, 5: 1.5})
