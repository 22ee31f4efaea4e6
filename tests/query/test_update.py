"""Update operators, table-driven: (document, update, expected document) plus mongod's errors."""

import datetime as dt
import re

import pytest
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.timestamp import Timestamp

from tidemark.protocol.errors import MongoError
from tidemark.query.update import apply_update, modified_paths, parse_update, upsert_seed

NOW = dt.datetime(2024, 5, 1, 12, 0, 0, 123456)


def run(doc, update, **kw):
    array_filters = kw.pop("array_filters", None)
    return apply_update(doc, parse_update(update, array_filters=array_filters), now=NOW, **kw)


CASES = [
    # $set / $unset
    ({"_id": 1}, {"$set": {"a": 1}}, {"_id": 1, "a": 1}),
    ({"_id": 1, "a": {"b": 1}}, {"$set": {"a.c": 2}}, {"_id": 1, "a": {"b": 1, "c": 2}}),
    ({"_id": 1}, {"$set": {"a.b.c": 1}}, {"_id": 1, "a": {"b": {"c": 1}}}),
    ({"_id": 1, "a": [1, 2]}, {"$set": {"a.1": 9}}, {"_id": 1, "a": [1, 9]}),
    ({"_id": 1, "a": [1]}, {"$set": {"a.3": 9}}, {"_id": 1, "a": [1, None, None, 9]}),
    ({"_id": 1}, {"$set": {"z": 1, "b": 2, "a": 3}}, {"_id": 1, "a": 3, "b": 2, "z": 1}),  # lexicographic
    ({"_id": 1, "a": 1, "b": 2}, {"$unset": {"a": ""}}, {"_id": 1, "b": 2}),
    ({"_id": 1, "a": [1, 2]}, {"$unset": {"a.0": 1}}, {"_id": 1, "a": [None, 2]}),
    # $inc / $mul numeric types
    ({"_id": 1, "a": 1}, {"$inc": {"a": 2}}, {"_id": 1, "a": 3}),
    ({"_id": 1}, {"$inc": {"a": 2}}, {"_id": 1, "a": 2}),
    ({"_id": 1, "a": 1}, {"$inc": {"a": 0.5}}, {"_id": 1, "a": 1.5}),
    ({"_id": 1, "a": 2**31 - 1}, {"$inc": {"a": 1}}, {"_id": 1, "a": Int64(2**31)}),
    ({"_id": 1, "a": Int64(5)}, {"$inc": {"a": 1}}, {"_id": 1, "a": Int64(6)}),
    ({"_id": 1, "a": 1}, {"$inc": {"a": Decimal128("0.1")}}, {"_id": 1, "a": Decimal128("1.1")}),
    ({"_id": 1, "a": 3}, {"$mul": {"a": 2}}, {"_id": 1, "a": 6}),
    ({"_id": 1}, {"$mul": {"a": 2.5}}, {"_id": 1, "a": 0.0}),
    # $min / $max
    ({"_id": 1, "a": 5}, {"$min": {"a": 3}}, {"_id": 1, "a": 3}),
    ({"_id": 1, "a": 5}, {"$min": {"a": 7}}, {"_id": 1, "a": 5}),
    ({"_id": 1, "a": 5}, {"$max": {"a": "x"}}, {"_id": 1, "a": "x"}),  # strings sort above numbers
    ({"_id": 1}, {"$max": {"a": 1}}, {"_id": 1, "a": 1}),
    # $rename
    ({"_id": 1, "a": 1, "c": 0}, {"$rename": {"a": "b"}}, {"_id": 1, "c": 0, "b": 1}),
    ({"_id": 1, "a": {"x": 1}}, {"$rename": {"a.x": "y"}}, {"_id": 1, "a": {}, "y": 1}),
    ({"_id": 1}, {"$rename": {"a": "b"}}, {"_id": 1}),
    # $currentDate
    ({"_id": 1}, {"$currentDate": {"d": True}}, {"_id": 1, "d": dt.datetime(2024, 5, 1, 12, 0, 0, 123000)}),
    ({"_id": 1}, {"$currentDate": {"t": {"$type": "timestamp"}}}, {"_id": 1, "t": Timestamp(1714564800, 1)}),
    # $push
    ({"_id": 1, "a": [1]}, {"$push": {"a": 2}}, {"_id": 1, "a": [1, 2]}),
    ({"_id": 1}, {"$push": {"a": 2}}, {"_id": 1, "a": [2]}),
    ({"_id": 1, "a": [1]}, {"$push": {"a": [2, 3]}}, {"_id": 1, "a": [1, [2, 3]]}),
    (
        {"_id": 1, "a": [1, 4]},
        {"$push": {"a": {"$each": [2, 3], "$position": 1}}},
        {"_id": 1, "a": [1, 2, 3, 4]},
    ),
    (
        {"_id": 1, "a": [5, 1]},
        {"$push": {"a": {"$each": [3], "$sort": 1, "$slice": 2}}},
        {"_id": 1, "a": [1, 3]},
    ),
    ({"_id": 1, "a": [5, 1]}, {"$push": {"a": {"$each": [3], "$slice": -2}}}, {"_id": 1, "a": [1, 3]}),
    (
        {"_id": 1, "a": [{"s": 2}, {"s": 1}]},
        {"$push": {"a": {"$each": [], "$sort": {"s": -1}}}},
        {"_id": 1, "a": [{"s": 2}, {"s": 1}]},
    ),
    ({"_id": 1, "a": [1]}, {"$push": {"a": {"$each": [2], "$position": -1}}}, {"_id": 1, "a": [2, 1]}),
    # $addToSet
    ({"_id": 1, "a": [1, 2]}, {"$addToSet": {"a": 2}}, {"_id": 1, "a": [1, 2]}),
    ({"_id": 1, "a": [1, 2]}, {"$addToSet": {"a": {"$each": [2, 3, 3]}}}, {"_id": 1, "a": [1, 2, 3]}),
    ({"_id": 1, "a": [1]}, {"$addToSet": {"a": 1.0}}, {"_id": 1, "a": [1]}),
    # $pop / $pull / $pullAll
    ({"_id": 1, "a": [1, 2, 3]}, {"$pop": {"a": 1}}, {"_id": 1, "a": [1, 2]}),
    ({"_id": 1, "a": [1, 2, 3]}, {"$pop": {"a": -1}}, {"_id": 1, "a": [2, 3]}),
    ({"_id": 1, "a": [1, 5, 7, 2]}, {"$pull": {"a": {"$gte": 5}}}, {"_id": 1, "a": [1, 2]}),
    ({"_id": 1, "a": [1, 2, 1]}, {"$pull": {"a": 1}}, {"_id": 1, "a": [2]}),
    ({"_id": 1, "a": [[7], 7, 3]}, {"$pull": {"a": {"$gte": 5}}}, {"_id": 1, "a": [[7], 3]}),
    ({"_id": 1, "a": [[1], 1]}, {"$pull": {"a": [1]}}, {"_id": 1, "a": [1]}),
    ({"_id": 1, "a": ["ab", "b", 1]}, {"$pull": {"a": re.compile("^a")}}, {"_id": 1, "a": ["b", 1]}),
    ({"_id": 1, "a": [{"x": 1, "y": 1}, {"x": 2}]}, {"$pull": {"a": {"x": 1}}}, {"_id": 1, "a": [{"x": 2}]}),
    ({"_id": 1, "a": [1, 2, 3, 1]}, {"$pullAll": {"a": [1, 3]}}, {"_id": 1, "a": [2]}),
    # $bit
    ({"_id": 1, "a": 13}, {"$bit": {"a": {"and": 10}}}, {"_id": 1, "a": 8}),
    ({"_id": 1, "a": 13}, {"$bit": {"a": {"or": 2}}}, {"_id": 1, "a": 15}),
    ({"_id": 1, "a": 13}, {"$bit": {"a": {"xor": Int64(1)}}}, {"_id": 1, "a": Int64(12)}),
    # array updates
    ({"_id": 1, "a": [1, 2, 3]}, {"$inc": {"a.$[]": 10}}, {"_id": 1, "a": [11, 12, 13]}),
    (
        {"_id": 1, "a": [{"b": 1}, {"b": 2}]},
        {"$set": {"a.$[].c": 0}},
        {"_id": 1, "a": [{"b": 1, "c": 0}, {"b": 2, "c": 0}]},
    ),
    # replacement keeps _id first
    ({"_id": 1, "a": 1}, {"b": 2}, {"_id": 1, "b": 2}),
    ({"_id": 1, "a": 1}, {"b": 2, "_id": 1}, {"_id": 1, "b": 2}),
]


@pytest.mark.parametrize("doc,update,expected", CASES, ids=[str(i) for i in range(len(CASES))])
def test_update_results(doc, update, expected):
    before = repr(doc)
    new, _ = run(doc, update)
    assert new == expected
    assert list(new) == list(expected)  # field order too
    assert type(new.get("a")) is type(expected.get("a"))
    assert repr(doc) == before  # the input document is never mutated


def test_modified_flag_is_false_for_no_op_updates():
    assert run({"_id": 1, "a": 1}, {"$set": {"a": 1}})[1] is False
    assert run({"_id": 1, "a": 1}, {"$set": {"a": 1.0}})[1] is True  # a type change is a change
    assert run({"_id": 1}, {"$unset": {"a": 1}})[1] is False
    assert run({"_id": 1, "a": [1]}, {"$addToSet": {"a": 1}})[1] is False
    assert run({"_id": 1, "a": 1}, {"_id": 1, "a": 1})[1] is False
    # a replacement is a no-op only when binary-equal to the document, _id included (mongod's
    # ObjectReplaceExecutor): without the _id it is a modification (and validated)
    assert run({"_id": 1, "a": 1}, {"a": 1})[1] is True
    assert run({"_id": 1, "a": 1}, {"a": 1.0, "_id": 1})[1] is True


def test_array_filters_select_elements():
    doc = {"_id": 1, "g": [95, 102, 90, 150]}
    new, _ = run(doc, {"$set": {"g.$[e]": 100}}, array_filters=[{"e": {"$gte": 100}}])
    assert new["g"] == [95, 100, 90, 100]
    doc = {"_id": 1, "s": [{"k": 1, "v": 0}, {"k": 2, "v": 0}]}
    new, _ = run(doc, {"$inc": {"s.$[x].v": 5}}, array_filters=[{"x.k": 2}])
    assert new["s"] == [{"k": 1, "v": 0}, {"k": 2, "v": 5}]


def test_positional_operator_uses_query_match():
    doc = {"_id": 1, "grades": [80, 85, 90]}
    new, _ = run(doc, {"$set": {"grades.$": 82}}, query={"grades": 85})
    assert new["grades"] == [80, 82, 90]
    doc = {"_id": 1, "s": [{"k": "a", "n": 1}, {"k": "b", "n": 1}]}
    new, _ = run(doc, {"$inc": {"s.$.n": 1}}, query={"s.k": "b"})
    assert new["s"][1]["n"] == 2
    with pytest.raises(MongoError) as info:
        run(doc, {"$set": {"s.$.n": 1}}, query={"_id": 1})
    assert info.value.code == 2


def test_set_on_insert_applies_only_on_upsert_insert():
    assert run({"_id": 1}, {"$setOnInsert": {"a": 1}})[0] == {"_id": 1}
    assert run({"_id": 1}, {"$setOnInsert": {"a": 1}}, is_upsert=True)[0] == {"_id": 1, "a": 1}


ERRORS = [
    (
        {"$foo": {"a": 1}},
        9,
        "Unknown modifier: $foo. Expected a valid update modifier or pipeline-style update specified as an array",
    ),
    ({"$set": 5}, 9, "Modifiers operate on fields but we found type int instead"),
    ({"$set": {"a": 1}, "$inc": {"a.b": 1}}, 40, "Updating the path 'a.b' would create a conflict at 'a'"),
    ({"$set": {"a.b": 1}, "$inc": {"a": 1}}, 40, "Updating the path 'a' would create a conflict at 'a'"),
    ({"$set": {"a": 1}, "$unset": {"a": 1}}, 40, "Updating the path 'a' would create a conflict at 'a'"),
    ({"$inc": {"a": "x"}}, 14, 'Cannot increment with non-numeric argument: {a: "x"}'),
    ({"$rename": {"a": "a"}}, 2, "The source and target field for $rename must differ"),
    ({"$rename": {"a": 1}}, 2, "The 'to' field for $rename must be a string"),
    ({"$set": {"a..b": 1}}, 56, "contains an empty field name"),
    ({"$pop": {"a": 2}}, 9, "$pop expects 1 or -1, found: 2"),
    (
        {"$push": {"a": {"$each": 1}}},
        2,
        "The argument to $each in $push must be an array but it was of type: int",
    ),
    ({"$push": {"a": {"$each": [], "$foo": 1}}}, 2, "Unrecognized clause in $push: $foo"),
    (
        {"$currentDate": {"a": {"$type": "x"}}},
        2,
        "The '$type' string field is required to be 'date' or 'timestamp'",
    ),
    ({"a": 1, "$set": {"b": 1}}, 52, "The dollar ($) prefixed field '$set' in '$set' is not allowed"),
    ([{"$group": {"_id": 1}}], 72, "$group is not allowed to be used within an update"),
    ({"$set": {"a.$[x]": 1}}, 2, "No array filter found for identifier 'x' in path 'a.$[x]'"),
]


@pytest.mark.parametrize("update,code,message", ERRORS, ids=[str(i) for i in range(len(ERRORS))])
def test_invalid_updates_raise_at_parse(update, code, message):
    with pytest.raises(MongoError) as info:
        parse_update(update)
    assert info.value.code == code
    assert message in info.value.message


def test_array_filter_validation():
    with pytest.raises(MongoError) as info:
        parse_update({"$set": {"a": 1}}, array_filters=[{"x": 1}])
    assert info.value.code == 9 and "The array filter for identifier 'x' was not used" in info.value.message
    with pytest.raises(MongoError) as info:
        parse_update({"$set": {"a.$[X]": 1}}, array_filters=[{"X": 1}])
    assert info.value.code == 2
    with pytest.raises(MongoError) as info:
        parse_update({"$set": {"a.$[x]": 1}}, array_filters=[{"x": 1}, {"x": 2}])
    assert info.value.code == 9


APPLY_ERRORS = [
    (
        {"_id": 1, "a": "s"},
        {"$inc": {"a": 1}},
        14,
        "Cannot apply $inc to a value of non-numeric type. {_id: 1} has the field 'a' of non-numeric type string",
    ),
    (
        {"_id": 1, "a": "s"},
        {"$push": {"a": 1}},
        2,
        "The field 'a' must be an array but is of type string in document {_id: 1}",
    ),
    (
        {"_id": 1, "a": "s"},
        {"$addToSet": {"a": 1}},
        2,
        "Cannot apply $addToSet to non-array field. Field named 'a' has non-array type string",
    ),
    ({"_id": 1, "a": 5}, {"$set": {"a.b": 1}}, 28, "Cannot create field 'b' in element {a: 5}"),
    (
        {"_id": 1},
        {"$set": {"_id": 2}},
        66,
        "Performing an update on the path '_id' would modify the immutable field '_id'",
    ),
    (
        {"_id": 1},
        {"_id": 2},
        66,
        "After applying the update, the (immutable) field '_id' was found to have been altered to _id: 2",
    ),
    ({"_id": 1, "a": 5}, {"$set": {"a.$[]": 1}}, 2, "Cannot apply array updates to non-array element a: 5"),
    ({"_id": 1, "a": 5}, {"$pull": {"a": 1}}, 2, "Cannot apply $pull to a non-array value"),
    (  # mongod 7.0's findLongestPrefix (path_support.cpp) refuses the field name on an array first
        {"_id": 1, "a": [{"b": 1}]},
        {"$rename": {"a.b": "c"}},
        28,
        "cannot use the part (a of a.b) to traverse the element ({a: [ { b: 1 } ]})",
    ),
]


@pytest.mark.parametrize(
    "doc,update,code,message", APPLY_ERRORS, ids=[str(i) for i in range(len(APPLY_ERRORS))]
)
def test_document_dependent_errors(doc, update, code, message):
    with pytest.raises(MongoError) as info:
        run(doc, update)
    assert info.value.code == code
    assert message in info.value.message


def test_upsert_seed_takes_query_equalities():
    assert upsert_seed({"a": 1, "b.c": 2, "d": {"$gt": 1}, "$and": [{"e": {"$eq": 3}}]}) == {
        "a": 1,
        "b": {"c": 2},
        "e": 3,
    }
    assert upsert_seed({"x": {"$in": [4]}, "r": {"$regex": "x"}, "$or": [{"q": 1}, {"p": 1}]}) == {"x": 4}
    assert upsert_seed({"$or": [{"q": 1}]}) == {"q": 1}
    with pytest.raises(MongoError) as info:
        upsert_seed({"$and": [{"a": 1}, {"a": 2}]})
    assert info.value.code == 54


def test_modified_paths_lists_written_paths():
    assert modified_paths(parse_update({"$set": {"meta.x": 1}, "$rename": {"a": "b"}})) == [
        "meta.x",
        "a",
        "b",
    ]
    assert modified_paths(parse_update({"x": 1})) == [""]


def test_pipeline_update_runs_stages_and_keeps_id():
    upd = parse_update([{"$set": {"total": {"$add": ["$a", "$b"]}}}, {"$unset": "b"}])
    assert upd.kind == "pipeline"
    new, modified = apply_update({"_id": 7, "a": 1, "b": 2}, upd)
    assert new == {"_id": 7, "a": 1, "total": 3} and modified
    new, _ = apply_update({"_id": 7, "a": 1}, parse_update([{"$replaceWith": {"x": "$a"}}]))
    assert new == {"_id": 7, "x": 1}
    with pytest.raises(MongoError) as info:
        apply_update({"_id": 7}, parse_update([{"$set": {"_id": 8}}]))
    assert info.value.code == 66


def test_array_updates_reaching_one_element_twice_conflict():
    upd = parse_update({"$set": {"a.$[]": 1, "a.$[x]": 2}}, array_filters=[{"x": 5}])
    with pytest.raises(MongoError) as info:
        apply_update({"_id": 1, "a": [5, 6]}, upd)
    assert info.value.code == 40
    assert "Update created a conflict at 'a.0'" in info.value.message
