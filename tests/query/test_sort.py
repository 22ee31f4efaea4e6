"""Sort: spec validation, BSON order across types, mongod's array rule, stability, top-k, memory limit."""

import os

import pytest

from tidemark.protocol.errors import MongoError
from tidemark.query.sort import make_sort_key, parse_sort, sort_documents


def ids(docs):
    return [d["_id"] for d in docs]


def test_parse_sort_accepts_numeric_directions():
    assert parse_sort({"a": 1, "b.c": -1.0}) == [("a", 1), ("b.c", -1)]


@pytest.mark.parametrize(
    "spec,code",
    [
        ({"a": 2}, 15975),
        ({"a": 0}, 15975),
        ({"a": "asc"}, 15974),
        ({"a": {"$foo": 1}}, 17312),
        ({"a": {"$meta": "bogus"}}, 31138),
        ({"a": {"$meta": "textScore"}}, 224),
        ({"$a": 1}, 16410),
    ],
)
def test_parse_sort_rejects_invalid_specs(spec, code):
    with pytest.raises(MongoError) as info:
        parse_sort(spec)
    assert info.value.code == code


def test_illegal_sort_key_message_shows_the_value_like_mongod():
    with pytest.raises(MongoError) as info:
        parse_sort({"a": "desc"})
    assert info.value.message == 'Illegal key in $sort specification: a: "desc"'


def test_mixed_types_sort_in_bson_order_with_missing_as_null():
    docs = [
        {"_id": 1, "a": "x"},
        {"_id": 2, "a": 5},
        {"_id": 3},
        {"_id": 4, "a": None},
        {"_id": 5, "a": {"b": 1}},
        {"_id": 6, "a": 2.5},
        {"_id": 7, "a": True},
    ]
    assert ids(sort_documents(docs, {"a": 1})) == [3, 4, 6, 2, 1, 5, 7]  # missing/null tie keeps input order
    assert ids(sort_documents(docs, {"a": -1})) == [7, 5, 1, 2, 6, 3, 4]


def test_arrays_sort_by_min_ascending_and_max_descending():
    docs = [{"_id": 1, "a": [1, 10]}, {"_id": 2, "a": [5]}, {"_id": 3, "a": 3}, {"_id": 4, "a": []}]
    assert ids(sort_documents(docs, {"a": 1})) == [4, 1, 3, 2]  # empty array sorts below null/numbers
    assert ids(sort_documents(docs, {"a": -1})) == [1, 2, 3, 4]


def test_dotted_sort_through_array_of_documents():
    docs = [{"_id": 1, "a": [{"b": 7}, {"b": 2}]}, {"_id": 2, "a": {"b": 4}}, {"_id": 3, "a": [{"c": 1}]}]
    assert ids(sort_documents(docs, {"a.b": 1})) == [3, 1, 2]
    assert ids(sort_documents(docs, {"a.b": -1})) == [1, 2, 3]


def test_multi_key_with_mixed_directions_is_stable():
    docs = [{"_id": i, "g": i % 2, "v": i // 3} for i in range(8)]
    out = sort_documents(docs, {"g": 1, "v": -1})
    assert ids(out) == [6, 4, 0, 2, 7, 3, 5, 1]


def test_top_k_equals_full_sort_prefix():
    docs = [{"_id": i, "a": (i * 7919) % 13} for i in range(200)]
    full = sort_documents(docs, {"a": -1})
    assert ids(sort_documents(docs, {"a": -1}, limit=17)) == ids(full[:17])


def test_memory_limit_raises_292_without_allow_disk_use():
    docs = [{"_id": i, "pad": "x" * 100} for i in range(100)]
    with pytest.raises(MongoError) as info:
        sort_documents(docs, {"_id": 1}, memory_limit=1000)
    assert info.value.code == 292
    assert "Sort exceeded memory limit of 1000 bytes" in info.value.message
    assert len(sort_documents(docs, {"_id": 1}, memory_limit=100_000, limit=3)) == 3


def test_allow_disk_use_spills_sorted_runs_and_merges_them_stably(tmp_path, monkeypatch):
    from tidemark.query import spill

    monkeypatch.setattr(spill, "SPILL_DIR", str(tmp_path / "_tmp"))
    docs = [{"_id": i, "k": (i * 7) % 13, "pad": "x" * 100} for i in range(500)]
    expected = sorted(docs, key=lambda d: d["k"])  # stable: ties keep input order
    spilled = list(sort_documents(iter(docs), {"k": 1}, memory_limit=5000, allow_disk_use=True))
    assert spilled == expected
    assert os.listdir(tmp_path / "_tmp") == []  # runs are anonymous files: nothing left behind
    top = list(sort_documents(iter(docs), {"k": -1}, memory_limit=5000, allow_disk_use=True, limit=300))
    assert top == sorted(docs, key=lambda d: -d["k"])[:300]  # a top-k that outgrew memory


def test_sort_key_compares_numbers_across_types():
    key = make_sort_key({"a": 1})
    assert key({"a": 2}) > key({"a": 1.5}) > key({"a": None})


def test_memory_estimate_over_many_documents_still_trips_the_limit():
    docs = ({"_id": i, "pad": "y" * 200} for i in range(20000))
    with pytest.raises(MongoError) as info:
        sort_documents(docs, {"_id": -1}, memory_limit=2_000_000)
    assert info.value.code == 292


@pytest.mark.parametrize("spec", [{"n": 1}, {"n": -1}, {"s": 1, "n": -1}, {"s": -1, "n": 1, "_id": -1}])
def test_homogeneous_fast_path_matches_general_key_order(spec):
    import random

    rng = random.Random(3)
    docs = [
        {"_id": i, "n": rng.choice([1, 2, 2.5, -1, 0.0]), "s": rng.choice(["a", "b", "B"])}
        for i in range(500)
    ]
    assert ids(sort_documents(docs, spec)) == ids(sorted(docs, key=make_sort_key(spec)))
    docs[7]["n"] = "mixed"  # one odd type: the general path must give the same order as the key function
    assert ids(sort_documents(docs, spec)) == ids(sorted(docs, key=make_sort_key(spec)))
