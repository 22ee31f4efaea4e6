"""Pure unit tests of the update behaviours the jstest port (tests/e2e/test_jstests_updates.py) found
differing from MongoDB 7.0: path viability of $pop/$pull/$pullAll, array-filter parsing (banned
features, parse errors first), array-update path conflicts and where they are reported, $push
modifier validation and no-op rules, upsert seeding from ``$all`` and the replacement upsert's ``_id``."""

from __future__ import annotations

import pytest
from bson import Decimal128, Int64

from tidemark.protocol.errors import MongoError
from tidemark.query.update import apply_update, parse_update, upsert_seed
from tidemark.query.update_parse import as_long


def run(doc: dict, update, **kw):
    return apply_update(doc, parse_update(update, array_filters=kw.pop("array_filters", None)), **kw)


def fails(code: int, fn, *args, **kw) -> str:
    with pytest.raises(MongoError) as info:
        fn(*args, **kw)
    assert info.value.code == code, info.value.message
    return info.value.message


# -- $pop / $pull / $pullAll never create a path, but a path they could not create is an error -----

@pytest.mark.parametrize("op, arg", [("$pop", 1), ("$pull", 1), ("$pullAll", [1])])
def test_non_creating_modifiers_refuse_non_viable_paths(op, arg):
    message = fails(28, run, {"_id": 0, "a": {"b": 1.0}}, {op: {"a.b.c": arg}})
    assert message == "Cannot use the part (c) of (a.b.c) to traverse the element ({b: 1.0})"
    message = fails(28, run, {"_id": 0, "a": {"b": [1, 2]}}, {op: {"a.b.c": arg}})
    assert message == "Cannot use the part (c) of (a.b.c) to traverse the element ({b: [ 1, 2 ]})"


@pytest.mark.parametrize("doc, path", [({"_id": 0}, "a.b"), ({"_id": 0, "a": {"c": 1}}, "a.b"),
                                       ({"_id": 0, "a": [{"b": 0}]}, "a.2.b"), ({"_id": 0, "a": [1]}, "a.5")])
@pytest.mark.parametrize("op, arg", [("$pop", 1), ("$pull", 1), ("$pullAll", [1])])
def test_non_creating_modifiers_are_no_ops_on_viable_missing_paths(doc, path, op, arg):
    assert run(doc, {op: {path: arg}}) == (doc, False)


def test_pop_of_a_non_array_names_the_whole_path():
    message = fails(14, run, {"_id": 0, "a": {"b": {"c": 1}}}, {"$pop": {"a.b": 1}})
    assert message == "Path 'a.b' contains an element of non-array type 'object'"


# -- arrayFilters ------------------------------------------------------------------------------

@pytest.mark.parametrize("flt, code, message", [
    ({"$text": {"$search": "x"}}, 2, "$text is not allowed in this context"),
    ({"$where": "this.a == 2"}, 2, "$where is not allowed in this context"),
    ({"$expr": {"$eq": ["$a", 1]}}, 224, "$expr is not allowed in this context"),
    ({"$jsonSchema": {}}, 224, "$jsonSchema is not allowed in this context"),
    ({"$or": [{"i": 1}, {"$expr": True}]}, 224, "$expr is not allowed in this context"),
    ({"i": {"$elemMatch": {"$where": "1"}}}, 2, "$where is not allowed in this context"),
    ({"loc": {"$geoNear": [50, 50]}}, 2, "$geoNear, $near, and $nearSphere are not allowed in this context"),
    ({"loc": {"$near": [50, 50]}}, 2, "$geoNear, $near, and $nearSphere are not allowed in this context"),
])
def test_array_filters_ban_special_features(flt, code, message):
    got = fails(code, parse_update, {"$set": {"a.$[i]": 1}}, array_filters=[flt])
    assert got == f"Error parsing array filter :: caused by :: {message}"


def test_array_filter_parse_errors_come_before_identifier_checks():
    message = fails(2, parse_update, {"$set": {"a.$[$i]": 1}}, array_filters=[{"$i": 0}])
    assert message.startswith("Error parsing array filter :: caused by :: ")
    assert "unknown top level operator: $i" in message


# -- array update conflicts --------------------------------------------------------------------

@pytest.mark.parametrize("fields, message", [
    ({"a.$[i]": 0, "a.$": 0}, "Updating the path 'a.$' would create a conflict at 'a'"),
    ({"a.$[i]": 0, "a.0": 0}, "Updating the path 'a.0' would create a conflict at 'a'"),
    ({"a.b": 0, "a.$[i]": 0}, "Updating the path 'a.$[i]' would create a conflict at 'a'"),
    ({"x.$[]": 0, "x.y": 0}, "Updating the path 'x.y' would create a conflict at 'x'"),
])
def test_array_updates_and_other_components_under_one_path_conflict(fields, message):
    filters = [{"i": 0}] if any("$[i]" in k for k in fields) else None
    assert fails(40, parse_update, {"$set": fields}, array_filters=filters) == message


def test_array_updates_of_different_identifiers_do_not_conflict_at_parse_time():
    parse_update({"$set": {"a.$[i].b": 1, "a.$[j].c": 1, "a.$[].d": 1}}, array_filters=[{"i": 0}, {"j": 1}])


@pytest.mark.parametrize("fields, filters, where", [
    ({"a.$[i].b.$[k].c": 1, "a.$[j].b.$[k].c": 2}, [{"i.x": 0}, {"j.x": 0}, {"k.y": 0}], "a.0.b.$[k].c"),
    ({"a.$[i].b.$[k].c": 1, "a.$[j].b.$[m].c": 2}, [{"i.x": 0}, {"j.x": 0}, {"k.y": 0}, {"m.y": 0}], "a.0.b.0.c"),
    ({"a.$[i]": 1, "a.$[j]": 2}, [{"i.x": 0}, {"j.x": 0}], "a.0"),
])
def test_concrete_conflicts_are_reported_where_the_update_trees_merge(fields, filters, where):
    doc = {"_id": 0, "a": [{"x": 0, "b": [{"y": 0, "c": 0}]}]}
    assert fails(40, run, doc, {"$set": fields}, array_filters=filters) == f"Update created a conflict at '{where}'"


# -- $push -------------------------------------------------------------------------------------

@pytest.mark.parametrize("sort, message", [
    ({"a.": 1}, "The $sort field is a dotted field but has an empty part: a."),
    ({".a": 1}, "The $sort field is a dotted field but has an empty part: .a"),
    ({"": 1}, "The $sort field cannot be empty"),
    (2, "The $sort element value must be either 1 or -1"),
    ("x", "The $sort is invalid: use 1/-1 to sort the whole element, or {field:1/-1} to sort embedded fields"),
])
def test_push_sort_validation(sort, message):
    assert fails(2, parse_update, {"$push": {"x": {"$each": [1], "$sort": sort}}}) == message


@pytest.mark.parametrize("clause", ["$slice", "$position"])
@pytest.mark.parametrize("value", [float("nan"), float("inf"), 2.5, 2.0**63, Decimal128("NaN"), Decimal128("1.5"), "1"])
def test_push_integer_clauses_refuse_non_integral_values(clause, value):
    # NaN and infinities once escaped as Python exceptions (InternalError on the wire).
    message = fails(2, parse_update, {"$push": {"x": {"$each": [1], clause: value}}})
    assert message.startswith(f"The value for {clause} must be an integer value")


@pytest.mark.parametrize("value, expected", [(2, 2), (Int64(-3), -3), (2.0, 2), (-0.0, 0), (Decimal128("4"), 4),
                                             (True, None), (2.5, None), (float("inf"), None), (2.0**63, None),
                                             (-(2.0**63), -(2**63))])
def test_as_long(value, expected):
    assert as_long(value) == expected


@pytest.mark.parametrize("push, changed", [
    ({"$each": []}, False),
    ({"$each": [], "$slice": 5}, False),
    ({"$each": [], "$slice": 1}, True),
    ({"$each": [], "$sort": 1}, True),
    ({"$each": [3]}, True),
])
def test_push_is_a_no_op_only_when_it_inserts_sorts_and_trims_nothing(push, changed):
    doc = {"_id": 0, "x": [1, 2]}
    assert run(doc, {"$push": {"x": push}})[1] is changed


def test_push_on_a_non_array_names_the_whole_path():
    message = fails(2, run, {"_id": 1, "a": {"b": 1}}, {"$push": {"a.b": 1}})
    assert message == "The field 'a.b' must be an array but is of type int in document {_id: 1}"


# -- upserts -----------------------------------------------------------------------------------

def test_upsert_seed_reads_all_as_equalities():
    assert upsert_seed({"x": {"$all": [1]}, "y.z": {"$all": [2]}}) == {"x": 1, "y": {"z": 2}}
    assert upsert_seed({"x": {"$all": [{"$elemMatch": {"a": 1}}]}}) == {}
    assert fails(54, upsert_seed, {"x": {"$all": [1, 2]}}) == "cannot infer query fields to set, path 'x' is matched twice"


def test_replacement_upsert_needs_a_whole_id():
    message = fails(111, run, {}, {"a": 1}, is_upsert=True, query={"_id.x": 1, "_id.y": 2})
    assert message == "field at '_id' must be exactly specified, field at sub-path '_id.x'found"
    # an operator upsert builds the _id from its parts
    assert run({"_id": {"x": 1}}, {"$set": {"a": 1}}, is_upsert=True, query={"_id.x": 1})[0] == {"_id": {"x": 1}, "a": 1}


# -- positional $ ------------------------------------------------------------------------------

@pytest.mark.parametrize("doc, query, path", [
    ({"_id": 0, "a": [0]}, {"a.0": 0}, "a.$"),
    ({"_id": 0, "a": [{"b": 0}]}, {"a.0.b": 0}, "a.$.b"),
    ({"_id": 0, "a": [{"b": [0]}]}, {"a.0.b.0": 0}, "a.$.b.0"),
])
def test_positional_ignores_explicit_array_offsets(doc, query, path):
    assert "did not find the match" in fails(2, run, doc, {"$set": {path: 1}}, query=query)


@pytest.mark.parametrize("doc, query, path, expected", [
    ({"_id": 0, "a": [{"b": [0, 1]}]}, {"a.0.b": 1}, "a.0.b.$", {"_id": 0, "a": [{"b": [0, 2]}]}),
    ({"_id": 0, "a": [{"b": [0, 1]}]}, {"a.b.1": 1}, "a.$.b.1", {"_id": 0, "a": [{"b": [0, 2]}]}),
    ({"_id": 0, "a": [0, 1], "b": [0]}, {"a": 1, "b.0": 0}, "a.$", {"_id": 0, "a": [0, 2], "b": [0]}),
])
def test_positional_comes_from_an_implicit_traversal(doc, query, path, expected):
    assert run(doc, {"$set": {path: 2}}, query=query) == (expected, True)


# -- SafeNum overflow --------------------------------------------------------------------------

@pytest.mark.parametrize("op, start, arg, shown", [
    ("$inc", Int64(2**63 - 1), 1, "(NumberLong)9223372036854775807"),
    ("$inc", Int64(-(2**63)), Int64(-1), "(NumberLong)-9223372036854775808"),
    ("$mul", 2**30, Int64(2**40), "(NumberInt)1073741824"),
])
def test_int64_overflow_fails_with_the_current_value(op, start, arg, shown):
    message = fails(2, run, {"_id": 1, "a": start}, {op: {"a": arg}})
    assert message == f"Failed to apply {op} operations to current value ({shown}) for document {{_id: 1}}"


def test_int32_overflow_widens_to_int64():
    new, _ = run({"_id": 1, "a": 2**31 - 1}, {"$inc": {"a": 1}})
    assert isinstance(new["a"], Int64) and new["a"] == 2**31


# -- $rename source viability ------------------------------------------------------------------

@pytest.mark.parametrize("doc, source, message", [
    ({"_id": 1, "f": 4}, "f.g", "cannot use the part (f of f.g) to traverse the element ({f: 4})"),
    ({"_id": 1, "a": {"f": "x"}}, "a.f.g", "cannot use the part (f of a.f.g) to traverse the element ({f: \"x\"})"),
])
def test_rename_source_must_be_viable(doc, source, message):
    assert fails(28, run, doc, {"$rename": {source: "z"}}) == message


def test_rename_of_a_missing_viable_source_is_a_no_op():
    doc = {"_id": 1, "a": {"c": 1}, "d": [{"e": 3}]}
    assert run(doc, {"$rename": {"a.b": "z", "d.5.e": "y"}}) == (doc, False)


# -- $pull conditions led by a logical operator --------------------------------------------------

def test_pull_with_a_logical_operator_matches_document_elements():
    doc = {"_id": 1, "a": [{"x": 1}, {"y": "y"}, {"z": "z"}, 5]}
    new, changed = run(doc, {"$pull": {"a": {"$or": [{"y": {"$exists": True}}, {"z": {"$exists": True}}]}}})
    assert changed and new["a"] == [{"x": 1}, 5]
    new, _ = run(doc, {"$pull": {"a": {"$and": [{"x": 1}]}}})
    assert new["a"] == [{"y": "y"}, {"z": "z"}, 5]


# -- array padding limit -----------------------------------------------------------------------

@pytest.mark.parametrize("op, arg", [("$set", 1), ("$inc", 1), ("$push", 1), ("$bit", {"or": 1})])
def test_padding_past_the_limit_fails_before_allocating(op, arg):
    doc = {"_id": 1, "a": [0], "b": {"c": []}}
    for path in ("a.1500002", "b.c.9999999999"):
        assert fails(34, run, doc, {op: {path: arg}}) == "can't backfill more than 1500000 elements"


def test_padding_up_to_the_limit_is_fine():
    new, _ = run({"_id": 1, "a": [0]}, {"$set": {"a.1500001": 1}})
    assert len(new["a"]) == 1500002 and new["a"][-1] == 1


# -- positional / array-filter placement (parse time) ------------------------------------------

@pytest.mark.parametrize("path, message", [
    ("a.$.b.$", "Too many positional (i.e. '$') elements found in path 'a.$.b.$'"),
    ("$", "Cannot have positional (i.e. '$') element in the first position in path '$'"),
    ("$.a", "Cannot have positional (i.e. '$') element in the first position in path '$.a'"),
    ("$[]", "Cannot have array filter identifier (i.e. '$[<id>]') element in the first position in path '$[]'"),
    ("$[i].a", "Cannot have array filter identifier (i.e. '$[<id>]') element in the first position in path '$[i].a'"),
])
def test_positional_placement_is_checked_at_parse(path, message):
    # "$[]" first once escaped as an IndexError (InternalError on the wire).
    filters = [{"i": 0}] if "$[i]" in path else None
    assert fails(2, parse_update, {"$set": {path: 1}}, array_filters=filters) == message


# -- $pop argument messages (mongod's parseIntegerElementToLong) --------------------------------

@pytest.mark.parametrize("arg, message", [
    (0, "$pop expects 1 or -1, found: 0"),
    (-2.0, "$pop expects 1 or -1, found: -2"),
    (2.5, "Expected an integer: a.b: 2.5"),
    (float("nan"), "Expected an integer, but found NaN in: a.b: nan"),
    (float("inf"), "Cannot represent as a 64-bit integer: a.b: inf"),
    (Decimal128("1.5"), 'Cannot represent as a 64-bit integer: a.b: NumberDecimal("1.5")'),
    (True, "Expected a number in: a.b: true"),
    ({"b": 1}, "Expected a number in: a.b: { b: 1 }"),
])
def test_pop_argument_messages(arg, message):
    assert fails(9, parse_update, {"$pop": {"a.b": arg}}) == message


@pytest.mark.parametrize("arg", [1, -1, 1.0, Int64(-1), Decimal128("1")])
def test_pop_accepts_integral_one_or_minus_one(arg):
    parse_update({"$pop": {"a": arg}})


# -- $bit messages -----------------------------------------------------------------------------

def test_bit_messages():
    assert fails(2, parse_update, {"$bit": {"a": {}}}) == (
        "You must pass in at least one bitwise operation. The format is: {$bit: {field: {and/or/xor: #}}")
    assert fails(2, run, {"_id": 1, "a": "s"}, {"$bit": {"a": {"and": 1}}}) == (
        "Cannot apply $bit to a value of non-integral type._id: 1 has the field a of non-integer type string")


# -- $currentDate options ----------------------------------------------------------------------

@pytest.mark.parametrize("arg, message", [
    ({"$type": "date", "x": 1}, "Unrecognized $currentDate option: x"),
    ({"x": 1}, "Unrecognized $currentDate option: x"),
    ({"$type": "week"}, "The '$type' string field is required to be 'date' or 'timestamp': "
                        "{$currentDate: {field : {$type: 'date'}}}"),
    (1, "int is not valid type for $currentDate. Please use a boolean ('true') or a $type expression "
        "({$type: 'timestamp/date'})."),
])
def test_current_date_argument_messages(arg, message):
    assert fails(2, parse_update, {"$currentDate": {"a": arg}}) == message


# -- the order new fields are created in (cmpPathsAndArrayIndexes) ------------------------------

def test_new_fields_follow_mongods_path_order():
    new, _ = run({"_id": 1, "x": {}}, {"$set": {"x.b": 1, "x.10": 1, "x.9": 1, "x.010": 1, "x.-a": 1, "x.0": 1}})
    assert list(new["x"]) == ["-a", "0", "010", "9", "10", "b"]


def test_array_positions_are_applied_in_numeric_order():
    new, _ = run({"_id": 1, "a": []}, {"$set": {"a.10": 10, "a.9": 9, "a.2": 2}})
    assert new["a"] == [None, None, 2, None, None, None, None, None, None, 9, 10]


def test_positional_takes_the_position_of_another_queried_array():
    doc = {"_id": 1, "x": [90, 91, 92], "y": ["a", "b", "c"]}
    assert run(doc, {"$set": {"y.$": "z"}}, query={"x": 92})[0]["y"] == ["a", "b", "z"]
    # the position is a field name for whatever the path reaches (UpdateObjectNode::apply applies the
    # positional child under mongod's matchedField): past the updated array's end it pads, in a
    # document it names a field, where nothing is it is created; only a query recording none fails
    assert run({"_id": 1, "x": [0, 1, 2], "y": [5]}, {"$set": {"y.$": 1}}, query={"x": 2})[0]["y"] == [5, None, 1]
    assert run({"_id": 1, "x": [0, 1, 2], "y": {"k": 0}}, {"$set": {"y.$": 1}}, query={"x": 2})[0]["y"] == {
        "k": 0, "2": 1}
    assert run({"_id": 1, "x": [0, 1, 2]}, {"$set": {"y.$.z": 1}}, query={"x": 1})[0]["y"] == {"1": {"z": 1}}
    assert "Cannot create field '2' in element {y: 5}" == fails(
        28, run, {"_id": 1, "x": [0, 1, 2], "y": 5}, {"$set": {"y.$": 1}}, query={"x": 2})
    assert "did not find" in fails(2, run, {"_id": 1, "x": [0, 1, 2]}, {"$set": {"x.$": 1}}, query={"_id": 1})
