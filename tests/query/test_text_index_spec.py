"""Text index specs, document traversal and ``$text`` parsing (pure): mongod 7.0's
``FTSSpec::fixSpec`` answers (67 for every invalid spec), ``numberInt`` weights,
``FTSElementIterator``'s languages and skipped fields, and ``parseText``'s error order."""

from __future__ import annotations

import math

import pytest
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from hypothesis import given
from hypothesis import strategies as st

from tidemark.protocol.errors import MongoError
from tidemark.query.text_index import TextSpec, _array_along, _number_int, normalize_text_spec, text_terms
from tidemark.query.text_lang import tokens, words
from tidemark.query.text_search import TextMatcher, parse_text


def spec_error(raw: dict, key: dict) -> tuple[int, str]:
    with pytest.raises(MongoError) as e:
        normalize_text_spec(raw, key)
    return e.value.code, e.value.message


@pytest.mark.parametrize("raw,key,message", [
    ({}, {"a": "text", "b": 1.7976931348623157e308}, "expected value 1 or -1 for non-text key in compound index"),
    ({}, {"a": "text", "b": "1"}, "expected value 1 or -1 for non-text key in compound index"),
    ({}, {"_fts": "x", "_ftsx": 1}, 'expecting _fts:"text"'),
    ({}, {"_fts": "text", "_ftsx": 2}, "expecting _ftsx:1"),
    ({}, {"_fts": "text"}, "expected _ftsx after _fts"),
    ({"weights": {"a": 1}}, {"_fts": "text", "a": 1}, "expected _ftsx after _fts"),
    ({}, {"_fts": 1, "a": "text"}, 'expecting _fts:"text"'),
    ({}, {"_ftsx": 1, "a": "text"}, "text index with reserved fields _fts/_ftsx not allowed"),
    ({}, {"a": "text", "_ftsx": 1}, "text index with reserved fields _fts/_ftsx not allowed"),
    ({}, {"a": "text", "b": 1, "c": "text"}, "'text' fields in index must all be adjacent"),
    ({"weights": {}}, {"a": 1, "_fts": "text", "_ftsx": 1}, "text index option 'weights' must specify fields or the wildcard"),
    ({}, {"a": 1, "_fts": "text", "_ftsx": 1}, "text index option 'weights' must specify fields or the wildcard"),
    ({"weights": {"a": "3"}}, {"a": "text"}, "weight for text index needs numeric type"),
    ({"weights": {"a": True}}, {"a": "text"}, "weight for text index needs numeric type"),
    ({"weights": 3}, {"a": "text"}, "text index option 'weights' must be an object"),
    ({"weights": {"b": 0.5}}, {"a": "text"}, "text index weight must be in the exclusive interval (0,100000) but found: 0"),
    ({"weights": {"b": 100000}}, {"a": "text"},
     "text index weight must be in the exclusive interval (0,100000) but found: 100000"),
    ({"weights": {"b": 1.7976931348623157e308}}, {"a": "text"},
     "text index weight must be in the exclusive interval (0,100000) but found: -2147483648"),
    ({"weights": {"a..b": 1}}, {"a": "text"}, "weight cannot have empty path component"),
    ({"weights": {"a.$b": 1}}, {"a": "text"}, "weight cannot have path component with $ prefix"),
    ({"default_language": 1}, {"a": "text"}, "default_language needs a string type"),
    ({"default_language": "spanglish"}, {"a": "text"}, "default_language is not valid"),
    ({"language_override": 1}, {"a": "text"}, "language_override must be a string"),
    ({"language_override": "a.b"}, {"a": "text"}, "language_override is not valid"),
    ({"language_override": "$x"}, {"a": "text"}, "language_override is not valid"),
    ({"language_override": ""}, {"a": "text"}, "language_override is not valid"),
    ({"textIndexVersion": "3"}, {"a": "text"}, "text index option 'textIndexVersion' must be a number"),
    ({"textIndexVersion": 4}, {"a": "text"}, "bad textIndexVersion: 4"),
])
def test_invalid_text_specs_are_67_with_mongods_message(raw, key, message):
    assert spec_error(raw, key) == (67, message)


def test_weights_are_stored_as_mongods_number_int():
    spec = normalize_text_spec({"weights": {"b": 2.9, "c": Decimal128("2.5"), "d": Int64(7)}}, {"a": "text"})
    assert spec["weights"] == {"a": 1, "b": 2, "c": 2, "d": 7}
    assert all(type(w) is int for w in spec["weights"].values())
    assert normalize_text_spec({}, {"a": "text", "b": 1.5})["key"] == {"_fts": "text", "_ftsx": 1, "b": 1.5}


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_number_int_of_a_double(x):
    in_range = math.isfinite(x) and -(2 ** 31) <= math.trunc(x) < 2 ** 31
    assert _number_int(x) == (math.trunc(x) if in_range else -(2 ** 31))


def test_number_int_of_other_types():
    assert [_number_int(v) for v in (True, "7", None, Int64(2 ** 32 + 5), -3, Decimal128("3.5"), Decimal128("NaN"))] \
        == [0, 0, 0, 5, -3, 4, -(2 ** 31)]


def texts(key: dict, doc: dict, **raw) -> list[tuple[str, float, str]]:
    return list(TextSpec(normalize_text_spec(raw, key)).texts(doc))


def test_a_sub_document_language_applies_below_it():
    doc = {"a": {"b": "testing", "language": "es"}, "c": [{"b": "x", "language": "fr"}, {"b": "y"}], "language": "de"}
    assert texts({"a.b": "text", "c.b": "text"}, doc) == [("testing", 1, "spanish"), ("x", 1, "french"), ("y", 1, "german")]
    assert texts({"$**": "text"}, doc) == [("testing", 1, "spanish"), ("x", 1, "french"), ("y", 1, "german")]
    with pytest.raises(MongoError) as e:
        texts({"a.b": "text"}, {"a": {"b": "t", "language": "elvish"}})
    assert (e.value.code, e.value.message) == (17262, "language override unsupported: elvish")
    with pytest.raises(MongoError) as e:
        texts({"a.b": "text"}, {"a": {"b": "t", "language": None}})
    assert e.value.code == 17261


def test_wildcard_skips_dotted_dollar_and_override_fields():
    doc = {"a.b": "dotted", "$p": "dollar", "x": {"idioma": "fr", "y": "kept", "language": "en"}, "idioma": "es"}
    assert texts({"$**": "text"}, doc, language_override="idioma") == [("kept", 1, "french"), ("en", 1, "french")]
    assert texts({"a.b": "text"}, {"a.b": "dotted"}) == []


def test_arrays_are_entered_from_non_array_parents_only():
    assert texts({"a": "text"}, {"a": ["x", ["y"], {"z": "w"}]}) == [("x", 1, "english")]
    assert texts({"a.b": "text"}, {"a": [[{"b": "no"}], {"b": ["yes", ["no"]]}]}) == [("yes", 1, "english")]


@pytest.mark.parametrize("doc,path,expected", [
    ({"a": {"b": []}}, "a.b", True), ({"a": [{"b": 1}]}, "a.b", True), ({"a": {"b": 1}}, "a.b", False),
    ({"a": [0, 1]}, "a.0", False), ({"a": [[8, 9], 1]}, "a.0", True), ({"a": [[8, 9], 1]}, "a.0.1", False),
    ({"a": [1]}, "a.5", False), ({}, "a.b", False), ({"a": 3}, "a.b", False),
])
def test_array_along_a_prefix_path(doc, path, expected):
    assert _array_along(doc, path.split(".")) is expected


def test_prefix_and_suffix_arrays_cannot_build_keys():
    spec = {"name": "t", **normalize_text_spec({}, {"a.b": 1, "w": "text", "z": -1})}
    assert text_terms(spec, {"a": {"b": 1}, "w": "dogs", "z": 2}) == ["dog"]
    for doc in ({"a": {"b": [1]}, "w": "dogs"}, {"a": {"b": 1}, "w": "x", "z": []}, {"a": [], "w": ""}):
        with pytest.raises(MongoError) as e:
            text_terms(spec, doc)
        assert e.value.code == 201 and "of text index contains an array in document: { " in e.value.message


@pytest.mark.parametrize("arg,code,message", [
    ({"$search": 1, "$foo": 1}, 14, "$search requires a string value"),
    ({"$search": "a", "$language": 1, "$foo": 1}, 14, "$language requires a string value"),
    ({"$search": "a", "$language": None}, 14, "$language requires a string value"),
    ({"$search": "a", "$caseSensitive": 1}, 14, "$caseSensitive requires a boolean value"),
    ({"$search": "a", "$foo": 1}, 2, "extra fields in $text"),
    ({"$search": "a", "$language": "elvish", "$foo": 1}, 2, "extra fields in $text"),
    ("a", 2, "$text expects an object"),
])
def test_text_operand_errors_in_mongods_order(arg, code, message):
    with pytest.raises(MongoError) as e:
        parse_text(arg)
    assert (e.value.code, e.value.message) == (code, message)


@pytest.mark.parametrize("version", [2, 3])
def test_an_unknown_language_fails_when_bound_to_the_index(version):
    query = parse_text({"$search": "a", "$language": "elvish"})
    with pytest.raises(MongoError) as e:
        TextMatcher(query, normalize_text_spec({"textIndexVersion": version}, {"a": "text"}))
    # (mongod's message names the index's own version)
    assert (e.value.code, e.value.message) == (2, f'unsupported language: "elvish" for text index version {version}')


def test_matcher_uses_each_strings_language():
    spec = normalize_text_spec({}, {"a.b": "text"})
    doc = {"a": {"b": "testing", "language": "es"}}
    assert TextMatcher(parse_text({"$search": "testing", "$language": "es"}), spec).evaluate(doc) is not None
    assert TextMatcher(parse_text({"$search": "testing", "$language": "en"}), spec).evaluate(doc) is None
    m = TextMatcher(parse_text({"$search": "testing", "$language": "es", "$caseSensitive": True}), spec)
    assert m.evaluate(doc) is not None


PT = "O próximo Vôo à Noite sobre o Atlântico, Põe Freqüentemente o único Médico."


def v2_spec(**raw) -> dict:
    """A stored version-2 spec (mongod's listIndexes form)."""
    return {**normalize_text_spec({**raw, "textIndexVersion": 2}, {"a": "text"}), "name": "a_text"}


def test_version2_tokenizer_is_ascii():
    assert words("l'été-là Ça_va, x.y", "french", version=2) == ["l", "été", "là", "Ça_va", "x", "y"]
    assert words("don't «quoted»", "english", version=2) == ["don't", "«quoted»"]
    assert list(tokens("ÉTÉ Atlântico", "portuguese", version=2)) == ["ÉtÉ", "atlânt"]  # ASCII folding only


@pytest.mark.parametrize("search,expected", [  # jstests/core/index/fts/fts_index_version2.js
    ("próximo vôo à", True), ("atlântico", True), ('"próxIMO"', True), ('"põe" atlânTico', True),
    ('"próximo vôo" "único médico"', True), ('"próximo vôo" -"único Atlântico"', True),
    ("proximo voo a", False), ("átlántico", False), ('"proxIMO"', False), ('"poé" atlânTico', False),
    ('"próximo voo" "unico médico"', False), ('"próximo Vôo" -"único Médico"', False),
])
def test_version2_matching_keeps_diacritics(search, expected):
    m = TextMatcher(parse_text({"$search": search}), v2_spec(default_language="portuguese"))
    assert (m.evaluate({"a": PT}) is not None) is expected


def test_version2_refuses_diacritic_sensitivity():
    with pytest.raises(MongoError) as e:
        TextMatcher(parse_text({"$search": "a", "$diacriticSensitive": True}), v2_spec())
    assert (e.value.code, e.value.message) == (2, "$diacriticSensitive requires a version 3 text index or higher")


def test_creating_a_version2_index_is_allowed():
    # mongod 7.0's FTSSpec::fixSpec accepts textIndexVersion 2 (jstests/core/index/fts/fts_index_version2.js);
    # version 1 (also mongod's) is not implemented here.
    assert normalize_text_spec({"textIndexVersion": 2.0}, {"a": "text"})["textIndexVersion"] == 2
    assert spec_error({"textIndexVersion": 1}, {"a": "text"}) == \
        (67, "Currently only textIndexVersion 2 and 3 are supported, not 1")


def test_lower_casing_is_per_code_point_like_mongods():
    assert list(tokens("ΟΔΟΣ οδος İstanbul", "none")) == ["οδοσ", "οδος", "istanbul"]
    assert list(tokens("İstanbul IRMAK", "turkish", stop_words=False)) == ["istanbul", "ırmak"]


def test_phrases_fold_case_like_mongods_case_folding():
    spec = normalize_text_spec({"default_language": "none"}, {"a": "text"})
    m = TextMatcher(parse_text({"$search": '"ΟΔΟΣ" οδος'}), spec)
    assert m.evaluate({"a": "μια οδος"}) is not None


def test_a_wildcard_weight_does_not_apply_to_other_fields():
    assert texts({"$**": "text"}, {"title": "a", "text": "b"}, weights={"$**": 10, "text": 2}) == \
        [("a", 1.0, "english"), ("b", 2, "english")]
