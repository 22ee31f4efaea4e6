"""Index key extraction (server/query/index_keys.py) and index choice (server/query/plan.py)."""

from __future__ import annotations

import pytest
from bson.max_key import MaxKey
from bson.min_key import MinKey

from tidemark.protocol.errors import MongoError
from tidemark.query import index_keys, plan
from tidemark.storage.keys import UNDEFINED, encode_key


def spec(key, name=None, **opts):
    return {"v": 2, "key": key, "name": name or index_keys.index_name_for(key), **opts}


def keys_of(s, doc):
    return sorted(index_keys.keyer_for(s).keys(doc))


def test_generated_index_names_follow_mongod():
    assert index_keys.index_name_for({"a": 1, "b": -1}) == "a_1_b_-1"
    assert index_keys.index_name_for({"a.b": 1.0}) == "a.b_1"


def test_missing_field_indexes_as_null():
    assert keys_of(spec({"a": 1}), {"_id": 1}) == [encode_key((None,), (1,))]


def test_array_field_gives_one_key_per_element():
    got = keys_of(spec({"a": 1}), {"a": [3, 1, 3]})
    assert got == sorted([encode_key((1,), (1,)), encode_key((3,), (1,))])


def test_empty_array_indexes_as_undefined_below_null():
    # mongod keys an empty array as undefined: no null key, so {a: null} does not find it
    assert keys_of(spec({"a": 1}), {"a": []}) == [encode_key((UNDEFINED,), (1,))]
    assert encode_key((UNDEFINED,), (1,)) < encode_key((None,), (1,))


def test_dotted_path_through_array_of_documents():
    """An element lacking the path is a null key (``{"a.b": null}`` matches the document), and so is a
    scalar element (mongod 7.0 btree_key_generator_test.cpp MultipleArraysNotParallel: the a.b.c keys
    of ``{a: [1, 2, {b: {c: [3, 4]}}]}`` are null, 3 and 4)."""
    got = keys_of(spec({"a.b": 1}), {"a": [{"b": 1}, {"b": 2}, {"c": 3}, 4]})
    assert got == sorted([encode_key((1,), (1,)), encode_key((2,), (1,)), encode_key((None,), (1,))])
    assert keys_of(spec({"a.b": 1}), {"a": [{"b": 1}, 4]}) == sorted([encode_key((1,), (1,)),
                                                                     encode_key((None,), (1,))])


def test_numeric_path_component_indexes_position():
    assert keys_of(spec({"a.1": 1}), {"a": [5, 6]}) == [encode_key((6,), (1,))]


def test_compound_key_with_one_array_expands_cartesian():
    got = keys_of(spec({"a": 1, "b": -1}), {"a": 1, "b": [1, 2]})
    assert got == sorted([encode_key((1, 1), (1, -1)), encode_key((1, 2), (1, -1))])


def test_parallel_arrays_are_refused_with_171():
    with pytest.raises(MongoError) as e:
        index_keys.keyer_for(spec({"a": 1, "b": 1})).keys({"a": [1], "b": [2]})
    assert e.value.code == 171


def test_sparse_index_skips_documents_without_any_key_field():
    s = spec({"a": 1, "b": 1}, sparse=True)
    assert keys_of(s, {"c": 1}) == []
    assert keys_of(s, {"b": 1}) == [encode_key((None, 1), (1, 1))]


def test_partial_index_skips_documents_failing_its_filter():
    s = spec({"a": 1}, name="a_partial", partialFilterExpression={"b": {"$gt": 5}})
    assert keys_of(s, {"a": 1, "b": 1}) == []
    assert keys_of(s, {"a": 1, "b": 6}) == [encode_key((1,), (1,))]


def test_key_value_reports_the_duplicate_key_values():
    s = spec({"a": 1, "b": 1})
    key = encode_key((1, 2), (1, 1))
    assert index_keys.keyer_for(s).key_value({"a": 1, "b": [3, 2]}, key) == {"a": 1, "b": 2}


ID = spec({"_id": 1}, name="_id_")
A = spec({"a": 1})
AB = spec({"a": 1, "b": -1})


def test_equality_on_indexed_field_uses_ixscan():
    p = plan.choose_plan([ID, A], {"a": 5})
    assert p.kind == "IXSCAN" and p.index["name"] == "a_1"
    assert p.bounds_desc == {"a": ["[5, 5]"]}


def test_no_usable_predicate_scans_collection():
    assert plan.choose_plan([ID, A], {"z": 5}).kind == "COLLSCAN"

def test_a_regex_without_prefix_scans_every_string_of_the_index():
    # mongod's plan too: an index is relevant to a regex on its field (tests/e2e/test_regex_index_bounds.py)
    p = plan.choose_plan([ID, A], {"a": {"$regex": "x"}})
    assert p.kind == "IXSCAN" and p.bounds_desc == {"a": ['["", {})', "[/x/, /x/]"]}


def test_hidden_indexes_are_not_chosen_sparse_ones_only_for_a_filter_false_of_missing():
    hidden = spec({"a": 1}, hidden=True)
    assert plan.choose_plan([ID, hidden], {"a": 5}).kind == "COLLSCAN"
    sparse = spec({"a": 1}, sparse=True)
    assert plan.choose_plan([ID, sparse], {"a": 5}).kind == "IXSCAN"  # (mongod's nodeIsSupportedBySparseIndex)
    assert plan.choose_plan([ID, sparse], {"a": None}).kind == "COLLSCAN"
    assert plan.choose_plan([ID, sparse], {"a": {"$in": [5, None]}}).kind == "COLLSCAN"
    assert plan.choose_plan([ID, sparse], {"a": None}, hint="a_1").kind == "IXSCAN"


def test_hint_by_name_or_key_pattern_and_unknown_hint_is_badvalue():
    assert plan.choose_plan([ID, A], {}, hint={"a": 1}).index["name"] == "a_1"
    assert plan.choose_plan([ID, A], {}, hint="_id_").index["name"] == "_id_"
    with pytest.raises(MongoError) as e:
        plan.choose_plan([ID, A], {}, hint="nope")
    assert e.value.code == 2


def test_natural_hint_forces_collection_scan_direction():
    p = plan.choose_plan([ID, A], {"a": 1}, hint={"$natural": -1})
    assert p.kind == "COLLSCAN" and p.natural_reverse


def test_compound_prefers_longer_equality_prefix():
    p = plan.choose_plan([ID, A, AB], {"a": 1, "b": 2})
    assert p.index["name"] == "a_1_b_-1"


def test_sort_on_index_fields_is_provided_by_scan_direction():
    p = plan.choose_plan([ID, A], {}, sort={"a": -1})
    assert p.kind == "IXSCAN" and p.reverse and p.provides_sort
    assert p.explain(sort={"a": -1})["stage"] == "FETCH"
    q = plan.choose_plan([ID, A], {"a": {"$gt": 1}}, sort={"z": 1})
    assert q.explain(sort={"a": 1})["stage"] == "SORT"


def test_in_gives_sorted_point_intervals():
    p = plan.choose_plan([ID, A], {"a": {"$in": [3, 1, 2, 1.0]}})
    assert len(p.intervals) == 3
    los = [iv.lo for iv in p.intervals]
    assert los == sorted(los)


def _entry_in(iv, key: bytes) -> bool:
    from tidemark.storage.keys import prefix_end

    lo_ok = iv.lo is None or (key >= iv.lo if iv.lo_incl else key >= prefix_end(iv.lo))
    hi_ok = iv.hi is None or (key < prefix_end(iv.hi) if iv.hi_incl else key < iv.hi)
    return lo_ok and hi_ok


@pytest.mark.parametrize("flt,inside,outside", [
    ({"a": 5}, [5, 5.0], [4, 6, "5"]),
    ({"a": {"$gte": 2, "$lt": 4}}, [2, 3, 3.9, 10], [1, 1.99]),
    ({"a": {"$lt": 4}}, [3, -100], [4.5, 5]),
    ({"a": {"$gt": 2}}, [2.5, 100], [1, 2 - 1e-9]),
])
def test_interval_bounds_contain_every_matching_key(flt, inside, outside):
    p = plan.choose_plan([ID, A], flt)
    rid = b"\x00" * 8
    for v in inside:
        k = encode_key((v,), (1,)) + rid
        assert any(_entry_in(iv, k) for iv in p.intervals), v
    for v in outside:
        k = encode_key((v,), (1,)) + rid
        assert not any(_entry_in(iv, k) for iv in p.intervals), v


def test_descending_component_bounds_are_inverted():
    p = plan.choose_plan([ID, AB], {"a": 1, "b": {"$gte": 10}})
    rid = b"\x01" * 8
    yes = encode_key((1, 20), (1, -1)) + rid
    no = encode_key((1, 5), (1, -1)) + rid
    assert any(_entry_in(iv, yes) for iv in p.intervals)
    assert not any(_entry_in(iv, no) for iv in p.intervals)
    assert p.bounds_desc["b"] == ["[inf.0, 10]"]  # (mongod: the open side ends at its type bracket)


def test_unbounded_trailing_component_spans_minkey_to_maxkey():
    p = plan.choose_plan([ID, AB], {"a": 1})
    assert p.bounds_desc == {"a": ["[1, 1]"], "b": ["[MaxKey, MinKey]"]}
    assert isinstance(MinKey(), MinKey) and isinstance(MaxKey(), MaxKey)


def test_huge_in_product_collapses_to_covering_ranges():
    ab = spec({"a": 1, "b": 1})
    p = plan.choose_plan([ID, ab], {"a": {"$in": list(range(100))}, "b": {"$in": list(range(100))}})
    assert len(p.intervals) == 1
    rid = b"\x00" * 8
    key = encode_key((50, 7), (1, 1)) + rid
    assert _entry_in(p.intervals[0], key)


def test_both_range_sides_on_one_path_keep_only_one_bound():
    """a: [1, 10] matches {a: {$gt: 5, $lt: 8}} (different elements meet each side): bounds must keep 10."""
    p = plan.choose_plan([ID, A], {"a": {"$lt": 8, "$gt": 5}})
    rid = b"\x00" * 8
    assert any(_entry_in(iv, encode_key((10,), (1,)) + rid) for iv in p.intervals)
    p = plan.choose_plan([ID, A], {"$and": [{"a": {"$lt": 8}}, {"a": {"$gt": 5}}]})
    assert any(_entry_in(iv, encode_key((10,), (1,)) + rid) for iv in p.intervals)


def test_two_sided_range_is_used_when_the_index_is_known_not_multikey():
    p = plan.choose_plan([ID, A], {"a": {"$lt": 8, "$gt": 5}}, multikey_default=False)
    rid = b"\x00" * 8
    assert not any(_entry_in(iv, encode_key((10,), (1,)) + rid) for iv in p.intervals)
    assert any(_entry_in(iv, encode_key((6,), (1,)) + rid) for iv in p.intervals)
    assert p.bounds_desc == {"a": ["[5, 8)"]} or p.bounds_desc == {"a": ["(5, 8)"]}
    flagged = spec({"a": 1}, multikey=True)
    p = plan.choose_plan([ID, flagged], {"a": {"$lt": 8, "$gt": 5}}, multikey_default=False)
    assert any(_entry_in(iv, encode_key((10,), (1,)) + rid) for iv in p.intervals)


def test_a_path_known_scalar_keeps_a_two_sided_range_on_a_multikey_index():
    """A buckets index {meta, control.max.t: -1}: meta may hold arrays, control.max.t never does."""
    key = {"m": 1, "t": -1}
    flagged = spec(key, multikey=True)
    flt = {"m": 1, "t": {"$gte": 5, "$lt": 8}}
    rid = b"\x00" * 8
    one_sided = plan.choose_plan([ID, flagged], flt)
    assert any(_entry_in(iv, encode_key((1, 10), (1, -1)) + rid) for iv in one_sided.intervals)
    p = plan.choose_plan([ID, flagged], flt, scalar_paths=frozenset({"t"}))
    assert not any(_entry_in(iv, encode_key((1, 10), (1, -1)) + rid) for iv in p.intervals)
    assert any(_entry_in(iv, encode_key((1, 6), (1, -1)) + rid) for iv in p.intervals)
    assert p.bounds_desc["t"] == ["(8, 5]"]
    # the multikey path itself stays one-sided
    p = plan.choose_plan([ID, spec({"m": 1}, multikey=True)], {"m": {"$gt": 5, "$lt": 8}},
                         scalar_paths=frozenset({"t"}))
    assert any(_entry_in(iv, encode_key((10,), (1,)) + rid) for iv in p.intervals)


def test_entries_multikey_reports_array_expansion():
    k = index_keys.keyer_for(spec({"a.b": 1}))
    assert k.entries_multikey({"a": {"b": 1}})[1] is False
    assert k.entries_multikey({"a": [{"b": 1}]})[1] is True
    assert index_keys.keyer_for(spec({"a": 1})).entries_multikey({"a": [1]})[1] is True


@pytest.mark.parametrize("directions", [(1, 1), (1, -1), (-1, 1), (-1, -1)])
def test_compound_bounds_never_exclude_a_matching_key(directions):
    """Brute force over small integer keys: every key satisfying the predicates lies in an interval."""
    import itertools
    import random

    rng = random.Random(7)
    s = spec({"a": directions[0], "b": directions[1]})
    ops = {"$gt": lambda v, q: v > q, "$gte": lambda v, q: v >= q, "$lt": lambda v, q: v < q,
           "$lte": lambda v, q: v <= q}
    rid = b"\x02" * 8
    for _ in range(200):
        flt: dict = {}
        for field in ("a", "b"):
            kind = rng.choice(["none", "eq", "in", "range", "range2"])
            if kind == "eq":
                flt[field] = rng.randint(0, 4)
            elif kind == "in":
                flt[field] = {"$in": rng.sample(range(5), 2)}
            elif kind == "range":
                flt[field] = {rng.choice(list(ops)): rng.randint(0, 4)}
            elif kind == "range2":
                flt[field] = {rng.choice(["$gt", "$gte"]): rng.randint(0, 2), rng.choice(["$lt", "$lte"]): rng.randint(2, 4)}

        def matches(field, v, flt=flt):
            cond = flt.get(field)
            if cond is None:
                return True
            if not isinstance(cond, dict):
                return v == cond
            if "$in" in cond:
                return v in cond["$in"]
            return all(ops[o](v, q) for o, q in cond.items())

        p = plan.choose_plan([ID, s], flt, hint=s["name"], multikey_default=False)
        for a, b in itertools.product(range(5), range(5)):
            key = encode_key((a, b), directions) + rid
            inside = any(_entry_in(iv, key) for iv in p.intervals)
            if matches("a", a) and matches("b", b):
                assert inside, (flt, a, b, p.intervals)


@pytest.mark.parametrize("direction", [1, -1])
def test_one_sided_range_stays_in_its_type_bracket(direction):
    import datetime

    s = spec({"a": direction})
    rid = b"\x03" * 8
    p = plan.choose_plan([ID, s], {"a": {"$gt": 5}}, multikey_default=False)
    inside = [6, 1e9, float("inf")]
    outside = ["str", {"x": 1}, True, datetime.datetime(2020, 1, 1), None, 4]
    for v in inside:
        assert any(_entry_in(iv, encode_key((v,), (direction,)) + rid) for iv in p.intervals), v
    for v in outside:
        assert not any(_entry_in(iv, encode_key((v,), (direction,)) + rid) for iv in p.intervals), v
    d0 = datetime.datetime(2024, 1, 1)
    p = plan.choose_plan([ID, s], {"a": {"$lt": d0}}, multikey_default=False)
    assert any(_entry_in(iv, encode_key((datetime.datetime(2023, 1, 1),), (direction,)) + rid) for iv in p.intervals)
    assert not any(_entry_in(iv, encode_key((5,), (direction,)) + rid) for iv in p.intervals)


def test_equality_prefix_lets_the_index_provide_a_trailing_sort():
    dt = spec({"device": 1, "ts": 1})
    p = plan.choose_plan([ID, dt], {"device": "d1"}, sort={"ts": -1})
    assert p.index["name"] == "device_1_ts_1" and p.reverse and p.provides_sort
    q = plan.choose_plan([ID, dt], {"device": {"$in": ["d1", "d2"]}}, sort={"ts": -1})
    assert not q.provides_sort  # two devices interleave: the sort must still run


def test_or_of_indexed_branches_becomes_an_index_union_only_when_allowed():
    B = spec({"b": 1})
    flt = {"$or": [{"a": 1}, {"b": {"$gt": 5}}]}
    assert plan.choose_plan([ID, A, B], flt).kind == "COLLSCAN"
    p = plan.choose_plan([ID, A, B], flt, allow_or=True)
    assert p.kind == "OR" and [b.index["name"] for b in p.branches] == ["a_1", "b_1"]
    assert p.explain(filter=flt)["inputStage"]["stage"] == "OR"
    assert plan.choose_plan([ID, A], {"$or": [{"a": 1}, {"z": 2}]}, allow_or=True).kind == "COLLSCAN"


@pytest.mark.parametrize("direction, served", [
    (1, True), (-1, True), (1.0, True), (-1.0, True), ({"$meta": "textScore"}, False), ({"$meta": 1}, False),
    ("1", False), (True, False), (None, False),
])
def test_only_numeric_sort_directions_are_an_index_order(direction, served):
    """A leading $sort an index could serve: numeric directions only. Anything else stays in the
    pipeline, where the $sort stage parses it (mongod's 31138 / 15974 even when the _id index leads)."""
    from tidemark.collections import leading_match_and_sort

    flt, sort = leading_match_and_sort([{"$match": {"a": 1}}, {"$sort": {"_id": direction}}])
    assert flt == {"a": 1}
    assert (sort is not None) is served
