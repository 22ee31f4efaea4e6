"""Stage semantics (examples from MongoDB's stage documentation)."""

import datetime as dt

import pytest
from bson.int64 import Int64

from tidemark.protocol.errors import MongoError
from tidemark.query.pipeline import PipelineContext, run_pipeline

D = dt.datetime


def run(pipeline, docs, ctx=None):
    return list(run_pipeline(pipeline, [dict(d) for d in docs], ctx))


SALES = [
    {"_id": 1, "item": "abc", "price": 10, "quantity": 2, "date": D(2014, 3, 1, 8)},
    {"_id": 2, "item": "jkl", "price": 20, "quantity": 1, "date": D(2014, 3, 1, 9)},
    {"_id": 3, "item": "xyz", "price": 5, "quantity": 10, "date": D(2014, 3, 15, 9)},
    {"_id": 4, "item": "xyz", "price": 5, "quantity": 20, "date": D(2014, 4, 4, 11, 21, 39)},
    {"_id": 5, "item": "abc", "price": 10, "quantity": 10, "date": D(2014, 4, 4, 21, 23, 13)},
]


def test_group_by_item_with_total_and_average():
    out = run([{"$group": {"_id": "$item", "total": {"$sum": {"$multiply": ["$price", "$quantity"]}},
                           "avgQ": {"$avg": "$quantity"}, "n": {"$count": {}}}}, {"$sort": {"_id": 1}}], SALES)
    assert out == [{"_id": "abc", "total": 120, "avgQ": 6.0, "n": 2},
                   {"_id": "jkl", "total": 20, "avgQ": 1.0, "n": 1},
                   {"_id": "xyz", "total": 150, "avgQ": 15.0, "n": 2}]


def test_group_numbers_of_equal_value_share_a_group_and_null_equals_missing():
    docs = [{"k": 1}, {"k": 1.0}, {"k": Int64(1)}, {"k": None}, {}]
    out = run([{"$group": {"_id": "$k", "n": {"$sum": 1}}}], docs)
    assert out == [{"_id": 1, "n": 3}, {"_id": None, "n": 2}]


def test_group_by_compound_id_and_date_trunc():
    out = run([{"$group": {"_id": {"day": {"$dateTrunc": {"date": "$date", "unit": "day"}}, "item": "$item"},
                           "q": {"$sum": "$quantity"}}}, {"$sort": {"_id.day": 1, "_id.item": 1}}], SALES)
    assert out[0] == {"_id": {"day": D(2014, 3, 1), "item": "abc"}, "q": 2}
    assert len(out) == 5


def test_group_requires_id():
    with pytest.raises(MongoError) as e:
        run([{"$group": {"x": {"$sum": 1}}}], [])
    assert e.value.code == 15955


def test_project_add_fields_set_unset():
    doc = [{"_id": 1, "a": {"b": 1, "c": 2}, "d": 3}]
    assert run([{"$project": {"a.b": 1, "e": {"$add": ["$d", 1]}}}], doc) == [{"_id": 1, "a": {"b": 1}, "e": 4}]
    assert run([{"$project": {"a": 0, "_id": 0}}], doc) == [{"d": 3}]
    assert run([{"$addFields": {"a.z": 9, "n": "$$REMOVE"}}], doc) == [{"_id": 1, "a": {"b": 1, "c": 2, "z": 9}, "d": 3}]
    assert run([{"$set": {"d": {"$multiply": ["$d", 2]}}}], doc) == [{"_id": 1, "a": {"b": 1, "c": 2}, "d": 6}]
    assert run([{"$unset": ["a.c", "d"]}], doc) == [{"_id": 1, "a": {"b": 1}}]
    assert run([{"$set": {"d": "$$REMOVE"}}], doc) == [{"_id": 1, "a": {"b": 1, "c": 2}}]


def test_add_fields_on_array_sets_field_in_each_element_and_replaces_scalars():
    assert run([{"$addFields": {"a.x": 1}}], [{"a": [{"y": 1}, 5]}]) == [{"a": [{"y": 1, "x": 1}, {"x": 1}]}]  # as mongod


@pytest.mark.parametrize(("doc", "expected"), [
    ({"_id": 1}, {"_id": 1, "obj": {}}),
    ({"_id": 1, "obj": 5}, {"_id": 1, "obj": {}}),
    ({"_id": 1, "obj": {"y": 1}}, {"_id": 1, "obj": {"y": 1}}),
    ({"_id": 1, "obj": [1, {"y": 1}, [2]]}, {"_id": 1, "obj": [{}, {"y": 1}, [{}]]}),
])
def test_add_fields_with_a_missing_value_still_makes_the_documents_on_its_path(doc, expected):
    """mongod replaces a non-document on the path (missing, a scalar, an array's scalar element) by a
    new document of the computed values, which a missing value leaves empty."""
    assert run([{"$addFields": {"obj.f": "$nope"}}], [doc]) == [expected]
    assert run([{"$set": {"obj.f": "$$REMOVE"}}], [doc]) == [expected]
    # (an inclusion: fields of obj dropped; an array's other elements keep their places and become documents
    # of the computed fields, as mongod 7.0's projection_node.cpp applyExpressionsToValue)
    projected = {**expected, "obj": [{}, {}, [{}]]} if isinstance(doc.get("obj"), list) else {"_id": 1, "obj": {}}
    assert run([{"$project": {"obj.f": "$nope"}}], [doc]) == [projected]


def test_inhibit_optimization_passes_documents_through_and_takes_only_an_empty_object():
    docs = [{"_id": 2, "a": 1}, {"_id": 1}]
    assert run([{"$_internalInhibitOptimization": {}}, {"$sort": {"_id": 1}}], docs) == [{"_id": 1}, {"_id": 2, "a": 1}]
    with pytest.raises(MongoError) as wrong_type:
        run([{"$_internalInhibitOptimization": 1}], docs)
    assert wrong_type.value.code == 14  # TypeMismatch, as mongod
    assert wrong_type.value.message.endswith("must take a nested object but found: $_internalInhibitOptimization: 1")
    with pytest.raises(MongoError) as not_empty:
        run([{"$_internalInhibitOptimization": {"a": 1}}], docs)
    assert not_empty.value.code == 9 and not_empty.value.message.endswith("must take an empty object but found: { a: 1 }")


def test_replace_root_and_replace_with():
    docs = [{"_id": 1, "name": {"first": "John", "last": "Backus"}}]
    assert run([{"$replaceRoot": {"newRoot": "$name"}}], docs) == [{"first": "John", "last": "Backus"}]
    assert run([{"$replaceWith": {"$mergeObjects": [{"_id": "$_id"}, "$name"]}}], docs) == \
        [{"_id": 1, "first": "John", "last": "Backus"}]
    with pytest.raises(MongoError) as e:
        run([{"$replaceRoot": {"newRoot": "$missing"}}], docs)
    assert e.value.code == 40228


def test_unwind_forms():
    docs = [{"_id": 1, "sizes": ["S", "M"]}, {"_id": 2, "sizes": []}, {"_id": 3, "sizes": None}, {"_id": 4},
            {"_id": 5, "sizes": "L"}]
    assert [d.get("sizes") for d in run([{"$unwind": "$sizes"}], docs)] == ["S", "M", "L"]
    out = run([{"$unwind": {"path": "$sizes", "preserveNullAndEmptyArrays": True, "includeArrayIndex": "idx"}}], docs)
    assert [(d["_id"], d.get("sizes"), d["idx"]) for d in out] == [
        (1, "S", 0), (1, "M", 1), (2, None, None), (3, None, None), (4, None, None), (5, "L", None)]
    assert "sizes" not in out[2]
    with pytest.raises(MongoError) as e:
        run([{"$unwind": "sizes"}], docs)
    assert e.value.code == 28818


def test_limit_skip_count_and_their_errors():
    assert [d["_id"] for d in run([{"$skip": 1}, {"$limit": 2}], SALES)] == [2, 3]
    assert run([{"$count": "n"}], SALES) == [{"n": 5}]
    assert run([{"$match": {"_id": 99}}, {"$count": "n"}], SALES) == []
    for stage, code in (({"$limit": 0}, 15958), ({"$limit": "x"}, 15957), ({"$skip": -1}, 15956),
                        ({"$count": "$x"}, 40158), ({"$count": ""}, 40157)):
        with pytest.raises(MongoError) as e:
            run([stage], [])
        assert e.value.code == code


def test_sort_by_count():
    out = run([{"$sortByCount": "$item"}], SALES)
    assert out[:2] in ([{"_id": "abc", "count": 2}, {"_id": "xyz", "count": 2}],
                       [{"_id": "xyz", "count": 2}, {"_id": "abc", "count": 2}])
    assert out[2] == {"_id": "jkl", "count": 1}


def test_bucket_documented_shape():
    docs = [{"price": p} for p in (5, 15, 150, 250, 400, "x")]
    out = run([{"$bucket": {"groupBy": "$price", "boundaries": [0, 200, 400], "default": "Other",
                            "output": {"count": {"$sum": 1}, "prices": {"$push": "$price"}}}}], docs)
    assert out == [{"_id": 0, "count": 3, "prices": [5, 15, 150]}, {"_id": 200, "count": 1, "prices": [250]},
                   {"_id": "Other", "count": 2, "prices": [400, "x"]}]
    with pytest.raises(MongoError) as e:
        run([{"$bucket": {"groupBy": "$price", "boundaries": [0, 200]}}], docs)
    assert e.value.code == 40066


def test_bucket_auto_even_buckets():
    docs = [{"v": v} for v in range(10)]
    out = run([{"$bucketAuto": {"groupBy": "$v", "buckets": 2}}], docs)
    assert out == [{"_id": {"min": 0, "max": 5}, "count": 5}, {"_id": {"min": 5, "max": 9}, "count": 5}]


def test_facet_runs_each_sub_pipeline_over_the_same_input():
    out = run([{"$facet": {"n": [{"$count": "n"}], "top": [{"$sort": {"price": -1}}, {"$limit": 1},
                                                             {"$project": {"_id": 1}}]}}], SALES)
    assert out == [{"n": [{"n": 5}], "top": [{"_id": 2}]}]
    with pytest.raises(MongoError) as e:
        run([{"$facet": {"x": [{"$out": "t"}]}}], [])
    assert e.value.code == 40600


def _ctx(collections):
    return PipelineContext(db="test", resolve_collection=lambda db, coll: iter([dict(d) for d in collections[coll]]))


ORDERS = [{"_id": 1, "item": "almonds", "price": 12, "quantity": 2}, {"_id": 2, "item": "pecans", "price": 20, "quantity": 1},
          {"_id": 3}]
INVENTORY = [{"_id": 1, "sku": "almonds", "instock": 120}, {"_id": 2, "sku": "bread", "instock": 80},
             {"_id": 3, "sku": "cashews", "instock": 60}, {"_id": 4, "sku": "pecans", "instock": 70},
             {"_id": 5, "sku": None}, {"_id": 6}]


def test_lookup_equality_documented_example():
    out = run([{"$lookup": {"from": "inventory", "localField": "item", "foreignField": "sku", "as": "inv"}}],
              ORDERS, _ctx({"inventory": INVENTORY}))
    assert [[i["_id"] for i in d["inv"]] for d in out] == [[1], [4], [5, 6]]  # missing matches null and missing


def test_lookup_pipeline_form_with_let():
    out = run([{"$lookup": {"from": "inventory", "let": {"want": "$quantity"}, "as": "inv", "pipeline": [
        {"$match": {"$expr": {"$gte": ["$instock", {"$multiply": ["$$want", 60]}]}}}, {"$project": {"_id": 1}}]}}],
        ORDERS[:2], _ctx({"inventory": INVENTORY}))
    assert out[0]["inv"] == [{"_id": 1}]
    assert out[1]["inv"] == [{"_id": 1}, {"_id": 2}, {"_id": 3}, {"_id": 4}]


def test_union_with():
    out = run([{"$project": {"_id": 1}}, {"$unionWith": {"coll": "inventory", "pipeline": [{"$match": {"instock": {"$gt": 100}}}]}}],
              ORDERS, _ctx({"inventory": INVENTORY}))
    assert [d["_id"] for d in out] == [1, 2, 3, 1]


def test_documents_stage():
    out = run([{"$documents": [{"x": 1}, {"x": 2}]}, {"$match": {"x": 2}}], [])
    assert out == [{"x": 2}]


def test_sample_returns_distinct_input_documents():
    out = run([{"$sample": {"size": 3}}], SALES)
    assert len(out) == 3 and len({d["_id"] for d in out}) == 3
    assert len(run([{"$sample": {"size": 10}}], SALES)) == 5


@pytest.mark.parametrize("spec,code", [
    ({"arr": {"$slice": 2}}, 28667),          # find-only $slice form
    ({"arr": {"$elemMatch": {"$gt": 1}}}, 168),
    ({"arr.$": 1}, 31324),                    # checked before the field path (projection_parser.cpp parseElement)
])
def test_project_rejects_find_only_projection_forms(spec, code):
    with pytest.raises(MongoError) as e:
        run([{"$project": spec}], [])
    assert e.value.code == code


def test_group_across_chunks_keeps_first_seen_order_and_first_last():
    docs = [{"k": i % 7, "v": i} for i in range(5000)]
    out = run([{"$group": {"_id": "$k", "first": {"$first": "$v"}, "last": {"$last": "$v"}, "n": {"$sum": 1},
                           "expr": {"$max": {"$multiply": ["$v", 2]}}}}], docs)
    assert [d["_id"] for d in out] == list(range(7))
    assert out[3] == {"_id": 3, "first": 3, "last": 4994, "n": 714, "expr": 9988}


def test_merge_options_are_validated_at_parse_time():
    from tidemark.query.stage_write import merge_options

    assert merge_options("t") == {"into": "t", "db": None, "on": ["_id"], "whenMatched": "merge",
                                  "whenNotMatched": "insert"}
    assert merge_options({"into": {"db": "d", "coll": "c"}, "on": ["a", "b"], "whenMatched": "replace"})["on"] == \
        ["a", "b"]
    for spec, code in [({"into": "t", "whenMatched": "keepExisting", "whenNotMatched": "discard"}, 51181),
                       ({"into": "t", "on": []}, 51187), ({"into": "t", "on": [{}]}, 51134),
                       ({"into": "t", "on": 3}, 51186), ({"into": "t", "on": ["a", "a"]}, 31465),
                       ({"into": "t", "let": {}}, 51199), ({"on": "a"}, 40414), (3, 51182),
                       ({"into": 3}, 51178), ({"into": ""}, 5786800), ({"into": {"coll": 3}}, 14),
                       ({"into": {"db": "d"}}, 5786801), ({"into": {"coll": "c", "x": 1}}, 40415)]:
        with pytest.raises(MongoError) as e:
            merge_options(spec)
        assert e.value.code == code, spec
