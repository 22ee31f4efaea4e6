"""The 32-key limit of every sort pattern a pipeline runs (mongod's Ordering::make: 13103 "too many
compound keys"): ``$sort``, the sort ``$setWindowFields`` runs on (partitionBy, then sortBy), and the
sortBy of ``$top``/``$bottom``/``$topN``/``$bottomN``. ``$meta`` sort keys are not part of the Ordering."""

from __future__ import annotations

import pytest

from tidemark.protocol.errors import MongoError
from tidemark.query.pipeline import PipelineContext, parse_pipeline, run_pipeline


def keys(n: int, start: int = 0) -> dict:
    return {f"f{i}": 1 if i % 2 == 0 else -1 for i in range(start, start + n)}


def parse(pipeline: list) -> None:
    parse_pipeline(pipeline, PipelineContext())


def fails_13103(pipeline: list) -> None:
    with pytest.raises(MongoError) as info:
        parse(pipeline)
    assert info.value.code == 13103 and str(info.value) == "too many compound keys"


@pytest.mark.parametrize("n", [1, 31, 32])
def test_sort_of_up_to_32_keys_parses_and_runs(n):
    docs = [{"f0": 2}, {"f0": 1}]
    assert [d["f0"] for d in run_pipeline([{"$sort": keys(n)}], iter(docs), PipelineContext())] == [1, 2]


@pytest.mark.parametrize("n", [33, 40])
def test_sort_of_more_than_32_keys_is_13103(n):
    fails_13103([{"$sort": keys(n)}])


def test_meta_keys_do_not_count():
    parse([{"$sort": {**keys(32), "score": {"$meta": "textScore"}}}])
    fails_13103([{"$sort": {**keys(33), "score": {"$meta": "textScore"}}}])


def test_set_window_fields_counts_the_partition_key():
    output = {"x": {"$sum": 1}}
    parse([{"$setWindowFields": {"sortBy": keys(32), "output": output}}])
    parse([{"$setWindowFields": {"partitionBy": "$p", "sortBy": keys(31), "output": output}}])
    fails_13103([{"$setWindowFields": {"partitionBy": "$p", "sortBy": keys(32), "output": output}}])
    fails_13103([{"$setWindowFields": {"sortBy": keys(33), "output": output}}])


@pytest.mark.parametrize("acc", [{"$top": {"output": "$a"}}, {"$bottom": {"output": "$a"}},
                                 {"$topN": {"output": "$a", "n": 2}}, {"$bottomN": {"output": "$a", "n": 2}}])
def test_top_bottom_sort_by(acc):
    name, args = next(iter(acc.items()))
    parse([{"$group": {"_id": None, "r": {name: {**args, "sortBy": keys(32)}}}}])
    fails_13103([{"$group": {"_id": None, "r": {name: {**args, "sortBy": keys(33)}}}}])
    fails_13103([{"$setWindowFields": {"sortBy": {"f0": 1}, "output": {"r": {name: {**args, "sortBy": keys(33)}}}}}])
