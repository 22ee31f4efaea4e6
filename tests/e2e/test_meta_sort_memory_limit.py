"""A sort by metadata ({$meta: "textScore"}, {$meta: "randVal"}) is a blocking sort like any other.

mongod's DocumentSourceSort / SortStage hand each document with its sort key to the one sort executor
(document_source_sort.cpp: ``extractSortKey`` -> ``_sortExecutor->add``; a $meta part of the pattern is
just a part of the key), so past internalQueryMaxBlockingSortMemoryUsageBytes it answers 292
QueryExceededMemoryLimitNoDiskUseAllowed without allowDiskUse and spills with it, for find and
aggregate alike, with or without a limit. Tidemark sorted a $meta sort in memory whatever its size:
no 292 and no spill (``sorted`` over every document), and a top-k of a $meta sort that outgrew the
limit was finished in memory too. Here every such sort is first shown to pass the limit (292 without
allowDiskUse), then its allowDiskUse answer is compared with the order the scores give.
"""

from __future__ import annotations

import pytest
from harness.parameters import server_parameter
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("aggregate", "find", "setParameter", "getParameter")

LIMIT = 64 * 1024
PAD = "p" * 2048  # ~30 documents fill the limit: the sorts below write several runs
HYPO = settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture
def small_sort_memory(client):
    with server_parameter(client, "internalQueryMaxBlockingSortMemoryUsageBytes", LIMIT):
        yield


def load(coll, keys: list[int], repeats: list[int]) -> dict[int, float]:
    """The documents (text repeated for a spread of scores) and their scores, read without a sort."""
    coll.drop()
    coll.insert_many([{"_id": i, "k": k, "t": "asdf " * r + "qwer", "pad": PAD}
                      for i, (k, r) in enumerate(zip(keys, repeats, strict=True))])
    coll.create_index([("t", "text")])
    shown = coll.aggregate([{"$match": {"$text": {"$search": "asdf"}}},
                            {"$project": {"s": {"$meta": "textScore"}}}])
    return {d["_id"]: d["s"] for d in shown}


def refused(run) -> None:
    with pytest.raises(OperationFailure) as err:
        run(False)
    assert err.value.code == 292
    assert err.value.details["errmsg"] == (
        f"Sort exceeded memory limit of {LIMIT} bytes, but did not opt in to external sorting.")


families = given(
    data=st.integers(50, 90).flatmap(lambda n: st.tuples(
        st.lists(st.integers(-3, 3), min_size=n, max_size=n),
        st.lists(st.integers(1, 30), min_size=n, max_size=n))),
    then=st.sampled_from([None, 1, -1]),  # a second sort key after the score, or none
    limit=st.sampled_from([None, 45]),  # (45 kept documents pass the limit: the top-k outgrows it)
)


def expected_ids(scores: dict[int, float], keys: list[int], then: int | None, limit: int | None) -> list[int]:
    # highest score first; ties by k (when sorted by it) and then in input order (_id order here)
    order = sorted(scores, key=lambda i: (-scores[i], (then or 0) * keys[i], i))
    return order if limit is None else order[:limit]


@HYPO
@families
def test_a_text_score_sort_past_the_limit_refuses_or_spills_in_aggregate(db, small_sort_memory, data, then, limit):
    keys, repeats = data
    scores = load(db.c, keys, repeats)
    sort = {"s": {"$meta": "textScore"}} | ({"k": then} if then else {})
    pipeline = [{"$match": {"$text": {"$search": "asdf"}}}, {"$sort": sort}]
    pipeline += [{"$limit": limit}] if limit else []
    pipeline += [{"$project": {"s": {"$meta": "textScore"}, "k": 1}}]

    def run(allow_disk_use: bool) -> list[dict]:
        return list(db.c.aggregate(pipeline, allowDiskUse=allow_disk_use))

    refused(run)
    got = run(True)
    assert [d["_id"] for d in got] == expected_ids(scores, keys, then, limit)
    assert all(d["s"] == scores[d["_id"]] for d in got)  # the scores came back from the runs


@HYPO
@families
def test_a_text_score_sort_past_the_limit_refuses_or_spills_in_find(db, small_sort_memory, data, then, limit):
    keys, repeats = data
    scores = load(db.c, keys, repeats)
    sort = [("s", {"$meta": "textScore"})] + ([("k", then)] if then else [])

    def run(allow_disk_use: bool) -> list[dict]:
        cursor = db.c.find({"$text": {"$search": "asdf"}}, {"s": {"$meta": "textScore"}, "k": 1},
                           allow_disk_use=allow_disk_use).sort(sort)
        return list(cursor.limit(limit) if limit else cursor)

    refused(run)
    got = run(True)
    assert [d["_id"] for d in got] == expected_ids(scores, keys, then, limit)
    assert all(d["s"] == scores[d["_id"]] for d in got)


def test_a_random_order_past_the_limit_refuses_or_spills(db, small_sort_memory):
    """{$meta: "randVal"}: any order, but every document once, bounded like the others."""
    load(db.c, [0] * 80, [1] * 80)

    def run(allow_disk_use: bool) -> list[dict]:
        return list(db.c.aggregate([{"$sort": {"r": {"$meta": "randVal"}}}, {"$project": {"_id": 1}}],
                                   allowDiskUse=allow_disk_use))

    refused(run)
    assert sorted(d["_id"] for d in run(True)) == list(range(80))


def test_a_small_text_score_sort_stays_in_memory(db, small_sort_memory):
    scores = load(db.c, [0] * 10, list(range(1, 11)))
    got = list(db.c.aggregate([{"$match": {"$text": {"$search": "asdf"}}}, {"$sort": {"s": {"$meta": "textScore"}}},
                               {"$project": {"_id": 1}}], allowDiskUse=False))
    assert [d["_id"] for d in got] == sorted(scores, key=lambda i: -scores[i])
