"""errInfo.details of 121 DocumentValidationFailure, through a running server: mongod's
doc_validation_error_test.cpp and doc_validation_error_json_schema_test.cpp cases (validator, document,
expected details), and the 'warn' action's log line (20294)."""

import copy
import json

import pytest
from bson.int64 import Int64
from bson.regex import Regex
from pymongo.errors import WriteError

DOCUMENT_VALIDATION_FAILURE = 121


def _details(db, validator, doc):
    db.create_collection("c", validator=validator)
    with pytest.raises(WriteError) as info:
        db.c.insert_one(copy.deepcopy(doc))
    assert info.value.code == DOCUMENT_VALIDATION_FAILURE
    return info.value.details["errInfo"]


def _leaf(op, spec, reason, **rest):
    return {"operatorName": op, "specifiedAs": spec, "reason": reason, **rest}


_A_LT_10 = {"a": {"$lt": 10}}
_POLYGON = {"$geometry": {"type": "Polygon", "coordinates": [[[0, 0], [0, 3], [3, 0], [0, 0]]]}}

# (validator, document, expected details): doc_validation_error_test.cpp
QUERY_CASES = {
    "eq": ({"a": {"$eq": 2}}, {"a": 1}, _leaf("$eq", {"a": {"$eq": 2}}, "comparison failed", consideredValue=1)),
    "eq missing path": ({"a": {"$eq": 2}}, {"b": 1}, _leaf("$eq", {"a": {"$eq": 2}}, "field was missing")),
    "eq implicit array traversal": ({"a": {"$eq": 2}}, {"a": [3, 4, 5]},
                                    _leaf("$eq", {"a": {"$eq": 2}}, "comparison failed", consideredValues=[3, 4, 5])),
    "eq nested document single element": ({"a.b": {"$eq": 2}}, {"a": [{"b": 3}]},
                                          _leaf("$eq", {"a.b": {"$eq": 2}}, "comparison failed", consideredValue=3)),
    "eq nested arrays": ({"a.b": {"$eq": 0}}, {"a": [{"b": [1, 2]}, {"b": [3, 4]}]},
                         _leaf("$eq", {"a.b": {"$eq": 0}}, "comparison failed", consideredValues=[1, 2, 3, 4])),
    "eq empty array": ({"a": {"$eq": [1, 2]}}, {"a": []},
                       _leaf("$eq", {"a": {"$eq": [1, 2]}}, "comparison failed", consideredValues=[])),
    "eq no operator": ({"a": 2}, {"a": 1}, _leaf("$eq", {"a": 2}, "comparison failed", consideredValue=1)),
    "ne": ({"a": {"$ne": 2}}, {"a": 2}, _leaf("$ne", {"a": {"$ne": 2}}, "comparison succeeded", consideredValue=2)),
    "ne implicit array traversal": ({"a": {"$ne": 2}}, {"a": [1, 2, 3]},
                                    _leaf("$ne", {"a": {"$ne": 2}}, "comparison succeeded",
                                          consideredValues=[1, 2, 3])),
    "lt": ({"a": {"$lt": 0}}, {"a": 1}, _leaf("$lt", {"a": {"$lt": 0}}, "comparison failed", consideredValue=1)),
    "lte missing": ({"a": {"$lte": 0}}, {"b": 1}, _leaf("$lte", {"a": {"$lte": 0}}, "field was missing")),
    "gt array": ({"a": {"$gt": 3}}, {"a": [0, 1, 2]},
                 _leaf("$gt", {"a": {"$gt": 3}}, "comparison failed", consideredValues=[0, 1, 2])),
    "gte empty array": ({"a": {"$gte": 3}}, {"a": []},
                        _leaf("$gte", {"a": {"$gte": 3}}, "comparison failed", consideredValues=[])),
    "in": ({"a": {"$in": [1, 2, 3]}}, {"a": 4},
           _leaf("$in", {"a": {"$in": [1, 2, 3]}}, "no matching value found in array", consideredValue=4)),
    "in missing": ({"a": {"$in": [1, 2, 3]}}, {"b": 1},
                   _leaf("$in", {"a": {"$in": [1, 2, 3]}}, "field was missing")),
    "in nested": ({"a.b": {"$in": [5, 6, 7, [2, 3, 4]]}}, {"a": [{"b": [1, 2]}, {"b": [3, 4]}]},
                  _leaf("$in", {"a.b": {"$in": [5, 6, 7, [2, 3, 4]]}}, "no matching value found in array",
                        consideredValues=[1, 2, 3, 4])),
    "nin": ({"a": {"$nin": [1, 2, 3]}}, {"a": 3},
            _leaf("$nin", {"a": {"$nin": [1, 2, 3]}}, "matching value found in array", consideredValue=3)),
    "in regex": ({"a": {"$in": [Regex("^v"), Regex("^b")]}}, {"a": "Validation"},
                 _leaf("$in", {"a": {"$in": [Regex("^v"), Regex("^b")]}}, "no matching value found in array",
                       consideredValue="Validation")),
    "nin regex": ({"a": {"$nin": [Regex("^v"), Regex("^b")]}}, {"a": "berry"},
                  _leaf("$nin", {"a": {"$nin": [Regex("^v"), Regex("^b")]}}, "matching value found in array",
                        consideredValue="berry")),
    "and": ({"$and": [{"b": {"$gt": 0}}, _A_LT_10]}, {"a": 11, "b": 2},
            {"operatorName": "$and", "clausesNotSatisfied": [
                {"index": 1, "details": _leaf("$lt", _A_LT_10, "comparison failed", consideredValue=11)}]}),
    "implicit and": ({"a": {"$gt": 0, "$lt": 10}}, {"a": 11},
                     {"operatorName": "$and", "clausesNotSatisfied": [
                         {"index": 1, "details": _leaf("$lt", _A_LT_10, "comparison failed", consideredValue=11)}]}),
    "nested and reports only the failing one": (
        {"$and": [{"$and": [{"a": 1}]}, {"$and": [{"b": 1}]}]}, {"a": 1, "b": 2},
        {"operatorName": "$and", "clausesNotSatisfied": [{"index": 1, "details": {
            "operatorName": "$and", "clausesNotSatisfied": [
                {"index": 0, "details": _leaf("$eq", {"b": 1}, "comparison failed", consideredValue=2)}]}}]}),
    "or": ({"$or": [{"a": {"$lt": 10}}, {"a": {"$gt": 20}}]}, {"a": 15},
           {"operatorName": "$or", "clausesNotSatisfied": [
               {"index": 0, "details": _leaf("$lt", _A_LT_10, "comparison failed", consideredValue=15)},
               {"index": 1, "details": _leaf("$gt", {"a": {"$gt": 20}}, "comparison failed", consideredValue=15)}]}),
    "nor": ({"$nor": [{"a": {"$gt": 10}}, {"b": {"$lt": 10}}]}, {"a": 9, "b": 9},
            {"operatorName": "$nor", "clausesSatisfied": [
                {"index": 1, "details": _leaf("$lt", {"b": {"$lt": 10}}, "comparison succeeded",
                                              consideredValue=9)}]}),
    "not": ({"a": {"$not": {"$lt": 10}}}, {"a": 9},
            {"operatorName": "$not", "details": _leaf("$lt", _A_LT_10, "comparison succeeded", consideredValue=9)}),
    "not over implicit and": (
        {"a": {"$not": {"$lt": 20, "$gt": 5}}}, {"a": 10},
        {"operatorName": "$not", "details": {"operatorName": "$and", "clausesSatisfied": [
            {"index": 0, "details": _leaf("$lt", {"a": {"$lt": 20}}, "comparison succeeded", consideredValue=10)},
            {"index": 1, "details": _leaf("$gt", {"a": {"$gt": 5}}, "comparison succeeded",
                                          consideredValue=10)}]}}),
    "nested not": ({"a": {"$not": {"$not": {"$lt": 10}}}}, {"a": 11},
                   {"operatorName": "$not", "details": {"operatorName": "$not", "details": _leaf(
                       "$lt", _A_LT_10, "comparison failed", consideredValue=11)}}),
    "and or": (
        {"$and": [{"$or": [{"price": {"$gt": 50}}, {"price": {"$lt": 20}}]}, {"qty": {"$gt": 0}},
                  {"qty": {"$lt": 10}}]}, {"price": 30, "qty": 30},
        {"operatorName": "$and", "clausesNotSatisfied": [
            {"index": 0, "details": {"operatorName": "$or", "clausesNotSatisfied": [
                {"index": 0, "details": _leaf("$gt", {"price": {"$gt": 50}}, "comparison failed",
                                              consideredValue=30)},
                {"index": 1, "details": _leaf("$lt", {"price": {"$lt": 20}}, "comparison failed",
                                              consideredValue=30)}]}},
            {"index": 2, "details": _leaf("$lt", {"qty": {"$lt": 10}}, "comparison failed", consideredValue=30)}]}),
    "and or nor not": (
        {"$and": [{"$or": [{"price": {"$lt": 20}}]},
                  {"$nor": [{"qty": {"$gt": 30}}, {"qty": {"$not": {"$lt": 20}}}]}]}, {"price": 10, "qty": 25},
        {"operatorName": "$and", "clausesNotSatisfied": [{"index": 1, "details": {
            "operatorName": "$nor", "clausesSatisfied": [{"index": 1, "details": {
                "operatorName": "$not", "details": _leaf("$lt", {"qty": {"$lt": 20}}, "comparison failed",
                                                         consideredValue=25)}}]}}]}),
    "exists": ({"a": {"$exists": True}}, {"b": 1}, _leaf("$exists", {"a": {"$exists": True}}, "path does not exist")),
    "not exists": ({"a": {"$exists": False}}, {"a": 1}, _leaf("$exists", {"a": {"$exists": False}}, "path does exist")),
    "type": ({"a": {"$type": "int"}}, {"a": "one"}, _leaf("$type", {"a": {"$type": "int"}}, "type did not match",
                                                            consideredValue="one", consideredType="string")),
    "not type": ({"a": {"$not": {"$type": "string"}}}, {"a": "words"},
                 {"operatorName": "$not", "details": _leaf("$type", {"a": {"$type": "string"}}, "type did match",
                                                           consideredValue="words", consideredType="string")}),
    "type missing": ({"a": {"$type": "double"}}, {"b": 1},
                     _leaf("$type", {"a": {"$type": "double"}}, "field was missing")),
    "type array": ({"a": {"$type": "double"}}, {"a": ["x", "y", "z"]},
                   _leaf("$type", {"a": {"$type": "double"}}, "type did not match", consideredValues=["x", "y", "z"],
                         consideredType="string")),
    "type empty array": ({"a": {"$type": "double"}}, {"a": []},
                         _leaf("$type", {"a": {"$type": "double"}}, "type did not match", consideredValues=[])),
    "expr": ({"$expr": {"$eq": ["$a", "$b"]}}, {"a": 1, "b": 2},
             _leaf("$expr", {"$expr": {"$eq": ["$a", "$b"]}}, "expression did not match", expressionResult=False)),
    "nor expr": ({"$nor": [{"$expr": {"$eq": ["$a", "$b"]}}]}, {"a": 1, "b": 1},
                 {"operatorName": "$nor", "clausesSatisfied": [{"index": 0, "details": _leaf(
                     "$expr", {"$expr": {"$eq": ["$a", "$b"]}}, "expression did match", expressionResult=True)}]}),
    "expr numeric result": ({"$expr": 0}, {"a": 1},
                            _leaf("$expr", {"$expr": 0}, "expression did not match", expressionResult=0)),
    "nor expr object result": ({"$nor": [{"$expr": {"$literal": {"b": 1}}}]}, {"a": 1},
                               {"operatorName": "$nor", "clausesSatisfied": [{"index": 0, "details": _leaf(
                                   "$expr", {"$expr": {"$literal": {"b": 1}}}, "expression did match",
                                   expressionResult={"b": 1})}]}),
    "mod": ({"a": {"$mod": [2, 1]}}, {"a": 2}, _leaf("$mod", {"a": {"$mod": [2, 1]}},
                                                     "$mod did not evaluate to expected remainder", consideredValue=2)),
    "not mod": ({"a": {"$not": {"$mod": [2, 0]}}}, {"a": 2},
                {"operatorName": "$not", "details": _leaf("$mod", {"a": {"$mod": [2, 0]}},
                                                          "$mod did evaluate to expected remainder",
                                                          consideredValue=2)}),
    "mod non numeric": ({"a": {"$mod": [2, 1]}}, {"a": "two"},
                        _leaf("$mod", {"a": {"$mod": [2, 1]}}, "type did not match", consideredType="string",
                              expectedTypes=["decimal", "double", "int", "long"], consideredValue="two")),
    "mod array non numeric": ({"a": {"$mod": [2, 1]}}, {"a": ["zero", "two"]},
                              _leaf("$mod", {"a": {"$mod": [2, 1]}}, "type did not match", consideredType="string",
                                    expectedTypes=["decimal", "double", "int", "long"],
                                    consideredValues=["zero", "two"])),
    "mod array mixed types": ({"a": {"$mod": [2, 1]}}, {"a": [0, "two"]},
                              _leaf("$mod", {"a": {"$mod": [2, 1]}}, "$mod did not evaluate to expected remainder",
                                    consideredValues=[0, "two"])),
    "regex": ({"a": {"$regex": "myRegex", "$options": ""}}, {"a": "one"},
              _leaf("$regex", {"a": {"$regex": "myRegex", "$options": ""}}, "regular expression did not match",
                    consideredValue="one")),
    "regex non string": ({"a": {"$regex": "myRegex"}}, {"a": 1},
                         _leaf("$regex", {"a": {"$regex": "myRegex"}}, "type did not match", consideredType="int",
                               expectedTypes=["regex", "string", "symbol"], consideredValue=1)),
    "regex no explicit operator": ({"a": Regex("^S")}, {"a": "so sorry"},
                                   _leaf("$regex", {"a": Regex("^S")}, "regular expression did not match",
                                         consideredValue="so sorry")),
    "not over regex": ({"a": {"$not": Regex("^S")}}, {"a": "S"},
                       {"operatorName": "$not", "details": _leaf("$regex", {"a": Regex("^S")},
                                                                 "regular expression did match",
                                                                 consideredValue="S")}),
    "bitsAllClear": ({"a": {"$bitsAllClear": 2}}, {"a": 7},
                     _leaf("$bitsAllClear", {"a": {"$bitsAllClear": 2}}, "bitwise operator failed to match",
                           consideredValue=7)),
    "not bitsAllClear": ({"a": {"$not": {"$bitsAllClear": 2}}}, {"a": 5},
                         {"operatorName": "$not", "details": _leaf(
                             "$bitsAllClear", {"a": {"$bitsAllClear": 2}}, "bitwise operator matched successfully",
                             consideredValue=5)}),
    "bitsAnySet positions": ({"a": {"$bitsAnySet": [1, 0]}}, {"a": 0},
                             _leaf("$bitsAnySet", {"a": {"$bitsAnySet": [1, 0]}},
                                   "bitwise operator failed to match", consideredValue=0)),
    "bitsAnyClear type mismatch": ({"a": {"$bitsAnyClear": 3}}, {"a": "someString"},
                                   _leaf("$bitsAnyClear", {"a": {"$bitsAnyClear": 3}}, "type did not match",
                                         consideredType="string",
                                         expectedTypes=["binData", "decimal", "double", "int", "long"],
                                         consideredValue="someString")),
    "geoWithin": ({"a": {"$geoWithin": _POLYGON}}, {"a": {"type": "Point", "coordinates": [3, 3]}},
                  _leaf("$geoWithin", {"a": {"$geoWithin": _POLYGON}},
                        "none of considered geometries was contained within the expression\u2019s geometry",
                        consideredValue={"type": "Point", "coordinates": [3, 3]})),
    "size": ({"a": {"$size": 2}}, {"a": [1, 2, 3]},
             _leaf("$size", {"a": {"$size": 2}}, "array length was not equal to given size",
                   consideredValue=[1, 2, 3])),
    "size non array": ({"a": {"$size": 2}}, {"a": 3},
                       _leaf("$size", {"a": {"$size": 2}}, "type did not match", consideredType="int",
                             expectedType="array", consideredValue=3)),
    "not over size": ({"a": {"$not": {"$size": 2}}}, {"a": [1, 2]},
                      {"operatorName": "$not", "details": _leaf("$size", {"a": {"$size": 2}},
                                                                "array length was equal to given size",
                                                                consideredValue=[1, 2])}),
    "all": ({"a": {"$all": [1, 2, 3]}}, {"a": [1, 2, 4]},
            _leaf("$all", {"a": {"$all": [1, 2, 3]}}, "array did not contain all specified values",
                  consideredValue=[1, 2, 4])),
    "all missing": ({"a": {"$all": [1, 2, 3]}}, {"b": [1, 2, 3]},
                    _leaf("$all", {"a": {"$all": [1, 2, 3]}}, "field was missing")),
    "all no values": ({"a": {"$all": []}}, {"a": [1, 2, 3]},
                      _leaf("$all", {"a": {"$all": []}}, "expression always evaluates to false")),
    "not over all": ({"a": {"$not": {"$all": [1, 2, 3]}}}, {"a": [1, 2, 3]},
                     {"operatorName": "$not", "details": _leaf("$all", {"a": {"$all": [1, 2, 3]}},
                                                               "array did contain all specified values",
                                                               consideredValue=[1, 2, 3])}),
    "elemMatch value": ({"a": {"$elemMatch": {"$gt": 0, "$lt": 10}}}, {"a": [10, 11, 12]},
                        _leaf("$elemMatch", {"a": {"$elemMatch": {"$gt": 0, "$lt": 10}}},
                              "array did not satisfy the child predicate", consideredValue=[10, 11, 12])),
    "elemMatch non array": ({"a": {"$elemMatch": {"b": {"$gt": 0}}}}, {"a": "foo"},
                            _leaf("$elemMatch", {"a": {"$elemMatch": {"b": {"$gt": 0}}}}, "type did not match",
                                  consideredType="string", expectedType="array", consideredValue="foo")),
    "not over elemMatch": ({"a": {"$not": {"$elemMatch": {"$gt": 0, "$lt": 10}}}}, {"a": [3, 4, 5]},
                           {"operatorName": "$not", "details": _leaf(
                               "$elemMatch", {"a": {"$elemMatch": {"$gt": 0, "$lt": 10}}},
                               "array did satisfy the child predicate", consideredValue=[3, 4, 5])}),
    "alwaysFalse": ({"$alwaysFalse": 1}, {"a": 1},
                    _leaf("$alwaysFalse", {"$alwaysFalse": 1}, "expression always evaluates to false")),
    "considered values truncated": ({"a": {"$lt": 0}}, {"a": list(range(1000))},
                                    _leaf("$lt", {"a": {"$lt": 0}}, "comparison failed",
                                          consideredValues=list(range(10)), consideredValuesTruncated=True)),
    "considered values at the limit": ({"a": {"$lt": 0}}, {"a": list(range(10))},
                                       _leaf("$lt", {"a": {"$lt": 0}}, "comparison failed",
                                             consideredValues=list(range(10)))),
}


def _schema(*rules):
    return {"operatorName": "$jsonSchema", "schemaRulesNotSatisfied": list(rules)}


def _props(*failed):
    return {"operatorName": "properties", "propertiesNotSatisfied": list(failed)}


def _prop(name, *details, **annotations):
    return {"propertyName": name, **annotations, "details": list(details)}


def _kw(name, spec, reason=None, value=None, **rest):
    out = {"operatorName": name, "specifiedAs": spec}
    if reason is not None:
        out["reason"] = reason
    if value is not None:
        out["consideredValue"] = value
    return {**out, **rest}


# doc_validation_error_json_schema_test.cpp
SCHEMA_CASES = {
    "minimum": ({"properties": {"a": {"minimum": 1}}}, {"a": 0},
                _schema(_props(_prop("a", _kw("minimum", {"minimum": 1}, "comparison failed", 0))))),
    "exclusive minimum": ({"properties": {"a": {"minimum": 1, "exclusiveMinimum": True}}}, {"a": 1},
                          _schema(_props(_prop("a", _kw("minimum", {"minimum": 1, "exclusiveMinimum": True},
                                                        "comparison failed", 1))))),
    "not": ({"not": {"properties": {"a": {"minimum": 1}}}}, {"a": 2},
            _schema({"operatorName": "not", "reason": "child expression matched"})),
    "top level minimum has no effect": (
        {"$nor": [{"$jsonSchema": {"minimum": 1}}]}, {"a": 2},
        {"operatorName": "$nor", "clausesSatisfied": [{"index": 0, "details": {
            "operatorName": "$jsonSchema", "reason": "schema matched"}}]}),
    "nested properties, maximum before minimum": (
        {"properties": {"a": {"properties": {"b": {"minimum": 10, "maximum": -10}}}}}, {"a": {"b": 5}},
        _schema(_props(_prop("a", _props(_prop(
            "b", _kw("maximum", {"maximum": -10}, "comparison failed", 5),
            _kw("minimum", {"minimum": 10}, "comparison failed", 5))))))),
    "a type contradicting a restriction drops it": (
        {"type": "object", "properties": {"a": {"type": "string", "minimum": 5}}}, {"a": 6},
        _schema(_props(_prop("a", _kw("type", {"type": "string"}, "type did not match", 6, consideredType="int"))))),
    "no top-level object type refuses all": (
        {"type": "number", "properties": {"a": {"minimum": 1}}}, {"a": 1},
        {"operatorName": "$jsonSchema",
         "specifiedAs": {"$jsonSchema": {"type": "number", "properties": {"a": {"minimum": 1}}}},
         "reason": "expression always evaluates to false"}),
    "required sorted": ({"required": ["c", "a", "b"]}, {"b": 1},
                        _schema(_kw("required", {"required": ["c", "a", "b"]}, missingProperties=["a", "c"]))),
    "nested required": ({"properties": {"a": {"required": ["b"]}}}, {"a": {"c": 1}},
                        _schema(_props(_prop("a", _kw("required", {"required": ["b"]}, missingProperties=["b"]))))),
    "required property missing reports only required": (
        {"required": ["a"], "properties": {"a": {"bsonType": "int", "minimum": 2}}}, {},
        _schema(_kw("required", {"required": ["a"]}, missingProperties=["a"]))),
    "minLength": ({"properties": {"a": {"minLength": 3}}}, {"a": "ab"},
                  _schema(_props(_prop("a", _kw("minLength", {"minLength": 3},
                                                "specified string length was not satisfied", "ab"))))),
    "pattern": ({"properties": {"a": {"pattern": "^x"}}}, {"a": "ab"},
                _schema(_props(_prop("a", _kw("pattern", {"pattern": "^x"}, "regular expression did not match",
                                              "ab"))))),
    "multipleOf": ({"properties": {"a": {"multipleOf": 2}}}, {"a": 3},
                   _schema(_props(_prop("a", _kw("multipleOf", {"multipleOf": 2},
                                                 "considered value is not a multiple of the specified value", 3))))),
    "maxItems": ({"properties": {"a": {"maxItems": 1}}}, {"a": [1, 2]},
                 _schema(_props(_prop("a", _kw("maxItems", {"maxItems": 1}, "array did not match specified length",
                                               [1, 2], numberOfItems=2))))),
    "items array": ({"properties": {"a": {"items": [{"type": "string"}, {"minimum": 5}]}}}, {"a": [1, 2, 3]},
                    _schema(_props(_prop("a", {"operatorName": "items", "details": [
                        {"itemIndex": 0, "details": [_kw("type", {"type": "string"}, "type did not match", 1,
                                                         consideredType="int")]},
                        {"itemIndex": 1, "details": [_kw("minimum", {"minimum": 5}, "comparison failed", 2)]}]})))),
    "additionalItems false": ({"properties": {"a": {"items": [{}], "additionalItems": False}}}, {"a": [1, 2, 3]},
                              _schema(_props(_prop("a", _kw("additionalItems", {"additionalItems": False},
                                                            "found additional items", additionalItems=[2, 3]))))),
    "additionalItems schema": (
        {"properties": {"a": {"items": [{}], "additionalItems": {"type": "string"}}}}, {"a": [1, "x", 3]},
        _schema(_props(_prop("a", {"operatorName": "additionalItems",
                                   "reason": "At least one additional item did not match the sub-schema",
                                   "itemIndex": 2, "details": [_kw("type", {"type": "string"}, "type did not match",
                                                                   3, consideredType="int")]})))),
    "additionalProperties schema and patternProperties": (
        {"properties": {"_id": {}}, "patternProperties": {"^a": {"type": "string"}},
         "additionalProperties": {"type": "number"}}, {"_id": 1, "ab": 1, "x": "y"},
        _schema({"operatorName": "additionalProperties",
                 "reason": "at least one additional property did not match the subschema",
                 "failingProperty": "x", "details": [_kw("type", {"type": "number"}, "type did not match", "y",
                                                         consideredType="string")]},
                {"operatorName": "patternProperties", "details": [{
                    "propertyName": "ab", "regexMatched": "^a",
                    "details": [_kw("type", {"type": "string"}, "type did not match", 1, consideredType="int")]}]})),
    "minProperties": ({"properties": {"a": {"minProperties": 2}}}, {"a": {"b": 1}},
                      _schema(_props(_prop("a", _kw("minProperties", {"minProperties": 2},
                                                    "specified number of properties was not satisfied",
                                                    numberOfProperties=1))))),
    "dependencies": (
        {"dependencies": {"a": ["b", "c"], "d": {"required": ["e"]}}}, {"a": 1, "c": 1, "d": 1},
        _schema({"operatorName": "dependencies", "failingDependencies": [
            {"conditionalProperty": "a", "missingProperties": ["b"]},
            {"conditionalProperty": "d", "details": [_kw("required", {"required": ["e"]},
                                                          missingProperties=["e"])]}]})),
    "allOf with annotations": (
        {"allOf": [{"required": ["a"], "title": "t"}, {"required": ["b"]}]}, {"b": 1},
        _schema({"operatorName": "allOf", "schemasNotSatisfied": [
            {"index": 0, "title": "t", "details": [_kw("required", {"required": ["a"]}, missingProperties=["a"])]}]})),
    "oneOf more than one": ({"oneOf": [{"required": ["a"]}, {"minProperties": 1}]}, {"a": 1},
                            _schema({"operatorName": "oneOf", "reason": "more than one subschema matched",
                                     "matchingSchemaIndexes": [0, 1]})),
    "top-level enum": ({"enum": [{"a": 1}, 2]}, {"_id": 1, "a": 2},
                       _schema(_kw("enum", {"enum": [{"a": 1}, 2]}, "value was not found in enum",
                                   {"_id": 1, "a": 2}))),
    "students collection (doc_validation_error.js)": (
        {"bsonType": "object", "required": ["name", "year", "major", "address"], "properties": {
            "name": {"bsonType": "string", "description": "must be a string and is required"},
            "year": {"bsonType": "int", "minimum": 2017, "maximum": 3017, "description": "in [2017, 3017]"},
            "major": {"enum": ["Math", "English", "Computer Science", "History", None], "description": "enum"},
            "gpa": {"bsonType": ["double"], "description": "must be a double if the field exists"},
            "address": {"bsonType": "object", "required": ["city"], "properties": {
                "street": {"bsonType": "string", "description": "must be a string if the field exists"},
                "city": {"bsonType": "string", "description": "must be a string and is required"}}}}},
        {"year": 2020, "major": "Software Engineering", "gpa": 5.0, "address": {"city": "NYC", "street": 5}},
        _schema(_props(
            _prop("major", _kw("enum", {"enum": ["Math", "English", "Computer Science", "History", None]},
                               "value was not found in enum", "Software Engineering"), description="enum"),
            _prop("address", _props(_prop("street", _kw("bsonType", {"bsonType": "string"}, "type did not match", 5,
                                                        consideredType="int"),
                                          description="must be a string if the field exists")))),
            _kw("required", {"required": ["name", "year", "major", "address"]}, missingProperties=["name"]))),
    "property title and description": (
        {"properties": {"a": {"type": "string", "maxLength": 4, "title": "property a",
                              "description": "a max length is 4"}}}, {"a": "foo, bar, baz"},
        _schema(_props(_prop("a", _kw("maxLength", {"maxLength": 4}, "specified string length was not satisfied",
                                      "foo, bar, baz"), title="property a", description="a max length is 4")))),
    "pattern on a non-string with its type: only the type": (
        {"properties": {"a": {"type": "string", "pattern": "^S"}}}, {"a": 1},
        _schema(_props(_prop("a", _kw("type", {"type": "string"}, "type did not match", 1, consideredType="int"))))),
    "required missing with type: neither the keyword nor the type": (
        {"required": ["a"], "properties": {"a": {"type": "string", "minLength": 1}}}, {},
        _schema(_kw("required", {"required": ["a"]}, missingProperties=["a"]))),
    "maxLength with required and type": (
        {"properties": {"a": {"maxLength": 2, "bsonType": "string"}}, "required": ["a", "b"]}, {"a": "aaaa", "b": 1},
        _schema(_props(_prop("a", _kw("maxLength", {"maxLength": 2}, "specified string length was not satisfied",
                                      "aaaa"))))),
    "additionalProperties false names _id too": (
        {"properties": {"b": {"type": "number"}}, "additionalProperties": False}, {"_id": 0, "a": 1, "b": 2},
        _schema({"operatorName": "additionalProperties", "specifiedAs": {"additionalProperties": False},
                 "additionalProperties": ["_id", "a"]})),
    "additionalProperties false at two levels": (
        {"additionalProperties": False, "properties": {"_id": {}, "a": {"type": "object",
                                                                        "additionalProperties": False}}},
        {"_id": 1, "a": {"b": 1}, "c": 1},
        _schema(_props(_prop("a", {"operatorName": "additionalProperties",
                                   "specifiedAs": {"additionalProperties": False}, "additionalProperties": ["b"]})),
                {"operatorName": "additionalProperties", "specifiedAs": {"additionalProperties": False},
                 "additionalProperties": ["c"]})),
    "patternProperties recursive": (
        {"patternProperties": {"^a": {"patternProperties": {"b+": {"type": "string"}}}}}, {"a": {"bbbbb": 1}},
        _schema({"operatorName": "patternProperties", "details": [{"propertyName": "a", "regexMatched": "^a",
                                                                   "details": [{
            "operatorName": "patternProperties", "details": [{"propertyName": "bbbbb", "regexMatched": "b+",
                                                              "details": [_kw("type", {"type": "string"},
                                                                              "type did not match", 1,
                                                                              consideredType="int")]}]}]}]})),
    "schema dependency and property dependency": (
        {"dependencies": {"a": {"properties": {"b": {"type": "number"}}}, "b": ["a", "c"]}},
        {"a": [0, 1, 2, 3], "b": "foo"},
        _schema({"operatorName": "dependencies", "failingDependencies": [
            {"conditionalProperty": "a", "details": [_props(_prop("b", _kw(
                "type", {"type": "number"}, "type did not match", "foo", consideredType="string")))]},
            {"conditionalProperty": "b", "missingProperties": ["c"]}]})),
    "items and additionalItems both fail": (
        {"properties": {"a": {"type": "array", "items": [{"type": "number"}, {"type": "string"}],
                              "additionalItems": {"type": "object", "description": "only extra documents"}}}},
        {"a": ["1", 2, {}, {"b": 1}, "Fail"]},
        _schema(_props(_prop("a", {"operatorName": "items", "details": [
            {"itemIndex": 0, "details": [_kw("type", {"type": "number"}, "type did not match", "1",
                                             consideredType="string")]},
            {"itemIndex": 1, "details": [_kw("type", {"type": "string"}, "type did not match", 2,
                                             consideredType="int")]}]},
            {"operatorName": "additionalItems", "description": "only extra documents",
             "reason": "At least one additional item did not match the sub-schema", "itemIndex": 4,
             "details": [_kw("type", {"type": "object"}, "type did not match", "Fail", consideredType="string")]})))),
    "top-level minProperties counts _id": (
        {"minProperties": 10}, {"_id": 1, "a": 1, "b": 2, "c": 3},
        _schema(_kw("minProperties", {"minProperties": 10}, "specified number of properties was not satisfied",
                    numberOfProperties=4))),
    "allOf over oneOf": (
        {"properties": {"a": {"allOf": [{"bsonType": "int"}, {"oneOf": [{"minimum": 1}, {"enum": [6, 7, 8]}]}]}}},
        {"a": 0},
        _schema(_props(_prop("a", {"operatorName": "allOf", "schemasNotSatisfied": [{"index": 1, "details": [{
            "operatorName": "oneOf", "schemasNotSatisfied": [
                {"index": 0, "details": [_kw("minimum", {"minimum": 1}, "comparison failed", 0)]},
                {"index": 1, "details": [_kw("enum", {"enum": [6, 7, 8]}, "value was not found in enum",
                                             0)]}]}]}]})))),
    "first duplicate item": ({"properties": {"a": {"type": "array", "uniqueItems": True}}}, {"a": [1, 2, 3, 3, 4, 4]},
                             _schema(_props(_prop("a", _kw("uniqueItems", {"uniqueItems": True},
                                                           "found a duplicate item", [1, 2, 3, 3, 4, 4],
                                                           duplicatedValue=3))))),
    "not inside a property": ({"properties": {"a": {"not": {}}}}, {"a": "foo"},
                              _schema(_props(_prop("a", {"operatorName": "not",
                                                         "reason": "child expression matched"})))),
    "anyOf over allOf": (
        {"anyOf": [{"allOf": [{"properties": {"d": {"type": "string", "minLength": 3}, "e": {"maxLength": 10}}}]},
                   {"allOf": [{"properties": {"a": {"type": "number", "maximum": 3},
                                              "c": {"type": "number", "enum": [1, 2, 3]}}}]}]},
        {"a": 0, "c": 0, "d": "foobar", "e": "a string that is over ten characters"},
        _schema({"operatorName": "anyOf", "schemasNotSatisfied": [
            {"index": 0, "details": [{"operatorName": "allOf", "schemasNotSatisfied": [{"index": 0, "details": [
                _props(_prop("e", _kw("maxLength", {"maxLength": 10}, "specified string length was not satisfied",
                                      "a string that is over ten characters")))]}]}]},
            {"index": 1, "details": [{"operatorName": "allOf", "schemasNotSatisfied": [{"index": 0, "details": [
                _props(_prop("c", _kw("enum", {"enum": [1, 2, 3]}, "value was not found in enum", 0)))]}]}]}]})),
    "title and description at the root": (
        {"title": "T", "description": "D", "required": ["a"]}, {"b": 1},
        {"operatorName": "$jsonSchema", "title": "T", "description": "D", "schemaRulesNotSatisfied": [
            _kw("required", {"required": ["a"]}, missingProperties=["a"])]}),
}


@pytest.mark.parametrize("name", list(QUERY_CASES))
def test_query_operator_details(db, name):
    validator, doc, expected = QUERY_CASES[name]
    assert _details(db, validator, doc)["details"] == expected


@pytest.mark.parametrize("name", list(SCHEMA_CASES))
def test_json_schema_details(db, name):
    schema, doc, expected = SCHEMA_CASES[name]
    validator = schema if "$nor" in schema else {"$jsonSchema": schema}
    assert _details(db, validator, doc)["details"] == expected


def test_failing_document_id(db):
    info = _details(db, {"a": {"$eq": 2}}, {"a": 1, "_id": 10})
    assert info == {"failingDocumentId": 10, "details": _leaf("$eq", {"a": {"$eq": 2}}, "comparison failed",
                                                              consideredValue=1)}


def test_update_gets_the_details_of_the_updated_document(db):
    db.create_collection("c", validator={"a": {"$lt": Int64(5)}})
    db.c.insert_one({"_id": 1, "a": 1})
    with pytest.raises(WriteError) as info:
        db.c.update_one({"_id": 1}, {"$set": {"a": 7}})
    assert info.value.details["errInfo"] == {"failingDocumentId": 1, "details": _leaf(
        "$lt", {"a": {"$lt": 5}}, "comparison failed", consideredValue=7)}


def test_warn_action_logs_the_details(db, client):
    # doc_validation_options.js: a bad update in 'warn' mode is applied and logged once (20294)
    db.create_collection("c", validator={"a": 1})
    db.c.insert_one({"_id": 1, "a": 1})
    db.command("collMod", "c", validationAction="warn")
    db.c.update_one({}, {"$set": {"a": 2}})
    assert db.c.count_documents({"a": 2}) == 1
    lines = [json.loads(line) for line in client.admin.command({"getLog": "global"})["log"]]
    mine = [e for e in lines if e.get("id") == 20294 and e["attr"].get("namespace") == f"{db.name}.c"]
    assert len(mine) == 1, mine
    assert mine[0]["s"] == "W" and mine[0]["msg"] == "Document would fail validation"
    assert mine[0]["attr"]["errInfo"] == {"failingDocumentId": 1, "details": {
        "operatorName": "$eq", "specifiedAs": {"a": 1}, "reason": "comparison failed", "consideredValue": 2}}
    # values are written as mongod writes them: relaxed Extended JSON
    oid = db.c.insert_one({"a": 3}).inserted_id
    lines = [json.loads(line) for line in client.admin.command({"getLog": "global"})["log"]]
    last = [e for e in lines if e.get("id") == 20294 and e["attr"].get("namespace") == f"{db.name}.c"][-1]
    assert last["attr"]["errInfo"]["failingDocumentId"] == {"$oid": str(oid)}
    assert last["attr"]["document"] == {"_id": {"$oid": str(oid)}, "a": 3}


def test_direct_bucket_insert_gets_the_details(db):
    db.create_collection("ts", timeseries={"timeField": "t"})
    with pytest.raises(WriteError) as info:
        db["system.buckets.ts"].insert_one({"_id": 1, "control": {"version": 1}})
    err_info = info.value.details["errInfo"]
    assert err_info["failingDocumentId"] == 1
    details = err_info["details"]
    assert details["operatorName"] == "$jsonSchema"
    assert details["schemaRulesNotSatisfied"], details
