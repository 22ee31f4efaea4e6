"""Text indexes and ``$text`` through pymongo, against hand-built fixtures.

Expected scores are computed by hand with mongod's formula (per field: weight x freq x
(0.5 x count / tokens + 0.5), x1.1 when the term is the whole field), from the stemmed,
stop-word-free tokens written out in each test.
"""

from __future__ import annotations

import pytest
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("createIndexes", "listIndexes", "find", "aggregate", "insert")

ARTICLES = [
    {"_id": 1, "title": "Coffee shop", "body": "Best coffee in town, running late"},
    {"_id": 2, "title": "Tea house", "body": "green tea and cakes"},
    {"_id": 3, "title": "Coffee and cake", "body": "decaf coffee"},
    {"_id": 4, "title": "Café culture", "body": "The CAFE opened"},
    {"_id": 5, "title": "Nothing here", "body": "the and of"},
]


@pytest.fixture
def articles(db):
    db.a.insert_many(ARTICLES)
    db.a.create_index([("title", "text"), ("body", "text")], weights={"title": 10})
    return db.a


def ids(cursor):
    return sorted(d["_id"] for d in cursor)


def test_text_index_spec_as_mongod_lists_it(articles):
    spec = next(s for s in articles.list_indexes() if s["name"] == "title_text_body_text")
    assert spec["key"] == {"_fts": "text", "_ftsx": 1}
    assert spec["weights"] == {"body": 1, "title": 10}
    assert spec["default_language"] == "english" and spec["language_override"] == "language"
    assert spec["textIndexVersion"] == 3


def test_terms_are_stemmed_and_any_term_matches(articles):
    assert ids(articles.find({"$text": {"$search": "coffees"}})) == [1, 3]
    assert ids(articles.find({"$text": {"$search": "run cakes"}})) == [1, 2, 3]  # running -> run, cake(s)
    assert ids(articles.find({"$text": {"$search": "the and of"}})) == []  # stop words only


def test_phrases_and_negations(articles):
    assert ids(articles.find({"$text": {"$search": "coffee -decaf"}})) == [1]
    assert ids(articles.find({"$text": {"$search": "\"green tea\""}})) == [2]
    assert ids(articles.find({"$text": {"$search": "coffee \"coffee shop\""}})) == [1]
    assert ids(articles.find({"$text": {"$search": "coffee -\"coffee shop\""}})) == [3]
    assert ids(articles.find({"$text": {"$search": "-coffee"}})) == []  # negations alone match nothing


def test_case_and_diacritic_sensitivity(articles):
    assert ids(articles.find({"$text": {"$search": "cafe"}})) == [4]
    assert ids(articles.find({"$text": {"$search": "café", "$diacriticSensitive": True}})) == [4]
    assert ids(articles.find({"$text": {"$search": "cafe", "$diacriticSensitive": True}})) == [4]  # body: CAFE
    assert ids(articles.find({"$text": {"$search": "CAFE", "$caseSensitive": True}})) == [4]
    assert ids(articles.find({"$text": {"$search": "Coffee", "$caseSensitive": True}})) == [1, 3]
    assert ids(articles.find({"$text": {"$search": "coffee", "$caseSensitive": True}})) == [1, 3]  # body
    assert ids(articles.find({"$text": {"$search": "shop", "$caseSensitive": True}})) == [1]
    assert ids(articles.find({"$text": {"$search": "Shop", "$caseSensitive": True}})) == []


def test_text_score_projection_and_sort(articles):
    # "coffee" -> term "coffe". Doc 1: title [coffe, shop] -> 10 x 1 x 0.75 = 7.5;
    #   body [best, coffe, town, run, late] -> 1 x 1 x 0.6 = 0.6; total 8.1.
    # Doc 3: title [coffe, cake] -> 7.5; body [decaf, coffe] -> 0.75; total 8.25.
    out = list(articles.find({"$text": {"$search": "coffee"}}, {"score": {"$meta": "textScore"}, "title": 1})
               .sort([("score", {"$meta": "textScore"})]))
    assert [d["_id"] for d in out] == [3, 1]
    assert [d["score"] for d in out] == pytest.approx([8.25, 8.1])
    assert set(out[0]) == {"_id", "title", "score"}
    # a $meta-only projection keeps the whole document
    whole = articles.find_one({"$text": {"$search": "tea"}}, {"s": {"$meta": "textScore"}})
    # doc 2: title [tea, hous] -> 10 x 0.75 = 7.5; body [green, tea, cake] -> 1 x (0.5/3 + 0.5) = 0.6667
    assert whole["body"] == "green tea and cakes" and whole["s"] == pytest.approx(7.5 + 2 / 3)


def test_repeated_terms_and_whole_field_boost(db):
    db.r.insert_many([{"_id": 1, "t": "run run run stop"}, {"_id": 2, "t": "Tea"}])
    db.r.create_index([("t", "text")])
    # doc 1: tokens [run, run, run, stop] (no stop words) -> freq 1 + 1/2 + 1/4, coeff 0.5 x 3/4 + 0.5
    s1 = db.r.find_one({"$text": {"$search": "running"}}, {"s": {"$meta": "textScore"}})["s"]
    assert s1 == pytest.approx(1.75 * 0.875)
    # doc 2: "tea" is its own stem and (case aside) the whole field: 1 x 1 x 1 x 1.1
    s2 = db.r.find_one({"$text": {"$search": "tea"}}, {"s": {"$meta": "textScore"}})["s"]
    assert s2 == pytest.approx(1.1)


def test_languages_default_and_override(db):
    db.l.insert_many([
        {"_id": 1, "txt": "les chats mangent"},
        {"_id": 2, "txt": "the cats eat", "lang": "english"},
        {"_id": 3, "txt": "die Katzen essen", "lang": "de"},
    ])
    db.l.create_index([("txt", "text")], default_language="french", language_override="lang")
    assert ids(db.l.find({"$text": {"$search": "chat"}})) == [1]  # french stemming; "les" is a stop word
    assert ids(db.l.find({"$text": {"$search": "cat", "$language": "english"}})) == [2]
    assert ids(db.l.find({"$text": {"$search": "katze", "$language": "german"}})) == [3]
    assert ids(db.l.find({"$text": {"$search": "les"}})) == []
    with pytest.raises(OperationFailure) as e:
        db.l.insert_one({"txt": "x", "lang": "klingon"})
    assert e.value.code == 17262


def test_wildcard_text_index_covers_every_string(db):
    db.w.insert_many([{"_id": 1, "a": {"b": "deep sea"}}, {"_id": 2, "c": ["sea shells", 5]}, {"_id": 3, "d": 1}])
    db.w.create_index([("$**", "text")])
    assert ids(db.w.find({"$text": {"$search": "sea"}})) == [1, 2]


def test_compound_text_index_needs_its_prefix(db):
    db.c.insert_many([{"_id": 1, "shop": "A", "t": "fresh bread"}, {"_id": 2, "shop": "B", "t": "fresh fish"}])
    db.c.create_index([("shop", 1), ("t", "text")])
    assert ids(db.c.find({"shop": "B", "$text": {"$search": "fresh"}})) == [2]
    with pytest.raises(OperationFailure) as e:
        list(db.c.find({"$text": {"$search": "fresh"}}))
    assert e.value.code == 291  # NoQueryExecutionPlans (query_planner.cpp: the text node tagged with no index)


def test_text_errors(db, articles):
    db.plain.insert_one({"x": "coffee"})
    with pytest.raises(OperationFailure) as e:
        list(db.plain.find({"$text": {"$search": "coffee"}}))
    assert (e.value.code, "text index required for $text query" in str(e.value)) == (27, True)
    with pytest.raises(OperationFailure) as e:
        articles.create_index([("other", "text")])  # every single text index has the key {_fts, _ftsx}: 85
    assert e.value.code == 85 and "An equivalent index already exists with a different name" in str(e.value)
    with pytest.raises(OperationFailure) as e:  # a compound text index is another key: the one-text rule
        articles.create_index([("x", 1), ("other", "text")])
    assert e.value.code == 67 and "only one text index per collection allowed" in str(e.value)
    with pytest.raises(OperationFailure) as e:
        list(articles.aggregate([{"$match": {}}, {"$match": {"$text": {"$search": "x"}}}]))
    assert e.value.code == 17313
    with pytest.raises(OperationFailure) as e:
        list(articles.find({"x": 1}, {"s": {"$meta": "textScore"}}))
    assert e.value.code == 40218
    with pytest.raises(OperationFailure) as e:
        list(articles.find({"$text": {"$search": "x", "$language": "elvish"}}))
    assert e.value.code == 2
    with pytest.raises(OperationFailure) as e:
        db.create_collection("ts", timeseries={"timeField": "t"})
        db.ts.create_index([("x", "text")])
    assert e.value.code == 72


def test_aggregate_text_match_meta_and_later_stages(articles):
    out = list(articles.aggregate([
        {"$match": {"$text": {"$search": "coffee cake"}}},
        {"$addFields": {"score": {"$meta": "textScore"}}},
        {"$sort": {"score": -1}},
        {"$project": {"title": 1, "score": 1, "again": {"$meta": "textScore"}}},
    ]))
    assert [d["_id"] for d in out] == [3, 1, 2]
    assert all(d["score"] == d["again"] for d in out)
    assert articles.count_documents({"$text": {"$search": "coffee"}}) == 2
    assert sorted(articles.distinct("_id", {"$text": {"$search": "tea"}})) == [2]


# Stages after a $text match whose outputs keep each input document's text score, as mongod's do
# (a new document made from the input carries its metadata).
SCORE_KEEPING_STAGES = {
    "lookup_equality": {"$lookup": {"from": "b", "localField": "_id", "foreignField": "a", "as": "j"}},
    "lookup_uncorrelated": {"$lookup": {"from": "b", "pipeline": [{"$match": {"a": 1}}], "as": "j"}},
    "lookup_let": {"$lookup": {"from": "b", "let": {"i": "$_id"},
                               "pipeline": [{"$match": {"$expr": {"$eq": ["$a", "$$i"]}}}], "as": "j"}},
    "lookup_equality_and_pipeline": {"$lookup": {"from": "b", "localField": "_id", "foreignField": "a",
                                                 "pipeline": [{"$project": {"_id": 0}}], "as": "j"}},
    "graph_lookup": {"$graphLookup": {"from": "b", "startWith": "$_id", "connectFromField": "a",
                                      "connectToField": "a", "as": "j"}},
    "add_fields": {"$addFields": {"x": 1}},
    "project": {"$project": {"title": 1}},
    "unset": {"$unset": "body"},
    "unwind": {"$unwind": {"path": "$tags", "preserveNullAndEmptyArrays": True}},
    "sort_skip_limit": {"$sort": {"_id": -1}},
}


@pytest.mark.parametrize("stage", SCORE_KEEPING_STAGES.values(), ids=SCORE_KEEPING_STAGES.keys())
def test_the_text_score_survives_later_stages(articles, db, stage):
    db.b.insert_many([{"_id": 10, "a": 1}, {"_id": 11, "a": 3}, {"_id": 12, "a": 3}])
    text = {"$match": {"$text": {"$search": "coffee cake"}}}
    scores = {d["_id"]: d["s"] for d in articles.aggregate([text, {"$project": {"s": {"$meta": "textScore"}}}])}
    out = list(articles.aggregate([text, stage, {"$project": {"s": {"$meta": "textScore"}}}]))
    assert sorted(d["_id"] for d in out) == sorted(scores) and len(scores) == 3
    assert {d["_id"]: d["s"] for d in out} == scores


def test_updates_and_deletes_with_text(articles):
    assert articles.update_many({"$text": {"$search": "coffee"}}, {"$set": {"caffeinated": True}}).modified_count == 2
    assert articles.delete_many({"$text": {"$search": "tea"}}).deleted_count == 1
    assert ids(articles.find({"caffeinated": True})) == [1, 3]


def test_very_long_words_are_indexed_and_found(db):
    word = "x" * 3000
    db.long.insert_many([{"_id": 1, "t": f"start {word} end"}, {"_id": 2, "t": word + "y"}])
    db.long.create_index([("t", "text")])
    assert ids(db.long.find({"$text": {"$search": word}})) == [1]


@pytest.mark.parametrize("weight", ["3", True, None, [1]])
def test_text_index_weights_must_be_numbers(db, weight):
    """mongod's isNumber: a string that spells a number is not one."""
    with pytest.raises(OperationFailure) as e:
        db.weights.create_index([("s", "text")], weights={"s": weight})
    # mongod 7.0 answers 67 CannotCreateIndex here (FTSSpec::fixSpec returns a Status since 4.x)
    assert e.value.code == 67 and "weight for text index needs numeric type" in str(e.value)
