"""MongoDB's text-search jstests ported to pymongo against a real Tidemark server: ``$text`` queries,
the ``textScore`` ``$meta`` in find / sort / projection / aggregate / findAndModify, phrases, negations,
languages and the language override, stemming and stop words, weights, compound text indexes, text
index options and their error codes.

Ported from ``jstests/core/index/fts/`` in mongodb/mongo (``jstests/core/`` in older versions), with
MongoDB 7.0's behaviour as the reference: fts1.js, fts2.js, fts3.js, fts4.js, fts5.js, fts6.js,
fts_array.js, fts_blog.js, fts_blogwild.js, fts_casesensitive.js, fts_diacritic_and_caseinsensitive.js,
fts_diacritic_and_casesensitive.js, fts_diacriticsensitive.js, fts_dotted_prefix_fields.js,
fts_find_and_modify.js, fts_index.js, fts_index2.js, fts_index3.js, fts_index_version2.js,
fts_index_wildcard_and_weight.js, fts_mix.js, fts_partition1.js, fts_partition_no_multikey.js,
fts_phrase.js, fts_proj.js, fts_projection.js, fts_querylang.js, fts_score_sort.js, fts_spanish.js,
fts_trailing_fields.js; and ``jstests/aggregation/bugs/server11675.js`` (text search inside
aggregation). Explain shapes (fts_explain.js, the TEXT_OR checks of fts_projection.js),
spilling (fts_spilling.js) and the 8.1-only ``{$meta: "score"}`` (fts_score_metadata.js) are left out.

``query_ids`` is the jstests' ``queryIDS`` (jstests/libs/fts.js): the ids of a ``$text`` find sorted
by ``textScore`` descending. Index-spec errors are mongod 7.0's ``FTSSpec::fixSpec`` answers: every
one is 67 CannotCreateIndex.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure, WriteError

pytestmark = pytest.mark.commands(
    "insert", "find", "count", "createIndexes", "dropIndexes", "listIndexes", "aggregate", "update", "delete",
    "findAndModify", "drop", "renameCollection",
)

BAD_VALUE = 2
CANNOT_CREATE_INDEX = 67
CANNOT_BUILD_INDEX_KEYS = 201
UNAVAILABLE_METADATA = 40218

MIX_DOCS = [
    {"_id": 1, "title": "Olivia Shakespear",
     "text": "Olivia Shakespear (born Olivia Tucker; 17 March 1863 – 3 October 1938) was a British novelist, playwright, "
             "and patron of the arts. She wrote six books that are described as \"marriage problem\" novels. Her works "
             "sold poorly, sometimes only a few hundred copies. Her last novel, Uncle Hilary, is considered her best. "
             "She wrote two plays in collaboration with Florence Farr."},
    {"_id": 2, "title": "Mahim Bora",
     "text": "Mahim Bora (born 1926) is an Indian writer and educationist from Assam state. He was born at a tea estate "
             "of Sonitpur district. He is an M.A. in Assamese literature from Gauhati University and had been a teacher "
             "in the Nowgong College for most of his teaching career. He has now retired and lives at Nagaon. Bora "
             "spent a good part of his childhood in the culture-rich surroundings of rural Nagaon, where the river "
             "Kalong was the life-blood of a community. His impressionable mind was to capture a myriad memories of "
             "that childhood, later to find expression in his poems, short stories and novels with humour, irony and "
             "pathos woven into their texture. When this river was dammed up, its disturbing effect was on the entire "
             "community dependant on nature's bounty."},
    {"_id": 3, "title": "A break away!",
     "text": "A break away! is an 1891 painting by Australian artist Tom Roberts. The painting depicts a mob of thirsty "
             "sheep stampeding towards a dam. A drover on horseback is attempting to turn the mob before they drown or "
             "crush each other in their desire to drink. The painting, an \"icon of Australian art\", is part of a "
             "series of works by Roberts that \"captures what was an emerging spirit of national identity.\" Roberts "
             "painted the work at Corowa. The painting depicts a time of drought, with little grass and the soil "
             "kicked up as dust. The work itself is a reflection on the pioneering days of the pastoral industry, "
             "which were coming to an end by the 1890s."},
    {"_id": 4, "title": "Linn-Kristin Riegelhuth Koren",
     "text": "Linn-Kristin Riegelhuth Koren (born 1 August 1984, in Ski) is a Norwegian handballer playing for Larvik "
             "HK and the Norwegian national team. She is commonly known as Linka. Outside handball she is a qualified "
             "nurse."},
    {"_id": 5, "title": "Morten Jensen",
     "text": "Morten Jensen (born December 2, 1982 in Lynge) is a Danish athlete. He primarily participates in long "
             "jump, 100 metres and 200 metres. He competed at the World Championships in 2005 and 2007, the 2006 "
             "World Indoor Championships, the 2006 European Championships, the 2007 World Championships and the 2008 "
             "Olympic Games without qualifying for the final round. He was runner-up in the 2010 Finnish Elite Games "
             "rankings, just missing out to Levern Spencer for that year's jackpot. He holds the Danish record in "
             "both long jump and 100 metres. He also holds the Danish indoor record in the 200 metres. He has been a "
             "part of the Sparta teamsine 2005, before then he was a part of FIF Hillerd. His coach was Leif "
             "Dahlberg after the 2010 European Championships he change to Lars Nielsen and Anders Miller."},
    {"_id": 6, "title": "Janet Laurence",
     "text": "Janet Laurence (born 1947) is a Sydney based Australian artist who works in mixed media and "
             "installation. Her work has been included in major survey exhibitions, nationally and internationally "
             "and is regularly exhibited in Sydney, Melbourne and Japan. Her work explores a relationship to the "
             "natural world, often from an architectural context. It extends from the gallery space into the urban "
             "fabric, and has been realized in many site specific projects, often involving collaborations with "
             "architects, landscape architects and environmental scientists. She has received many grants and awards "
             "including a Rockefeller Residency in 1997. Laurence was a Trustee of the Art Gallery of NSW from 1995 "
             "to 2005. Laurence was the subject of John Beard's winning entry for the 2007 Archibald Prize."},
    {"_id": 7, "title": "Glen-Coats Baronets",
     "text": "The Glen-Coats Baronetcy, of Ferguslie Park in the Parish of Abbey in the County of Renfrew, was a title "
             "in the Baronetage of the United Kingdom. It was created on 25 June 1894 for Thomas Glen-Coats, Director "
             "of the thread-making firm of J. & P. Coats, Ltd, and later Liberal Member of Parliament for "
             "Renfrewshire West. Born Thomas Coats, he assumed the additional surname of Glen, which was that of his "
             "maternal grandfather. He was succeeded by his son, the second Baronet. He won a gold medal in sailing "
             "at the 1908 Summer Olympics. The title became extinct on his death in 1954. Two other members of the "
             "Coats family also gained distinction. George Coats, 1st Baron Glentanar, was the younger brother of "
             "the first Baronet, while Sir James Coats, 1st Baronet (see Coats Baronets), was the first cousin of the "
             "first Baronet."},
    {"_id": 8, "title": "Grapeleaf Skeletonizer",
     "text": "The Grapeleaf Skeletonizer, Harrisina americana is a moth in the family Zygaenidae. It is widespread in "
             "the eastern half of the United States, and commonly noticed defoliating grapes, especially of the "
             "Virginia creeper (Parthenocissus quinquefolia). The western grapeleaf skeletonizer, Harrisina brillians "
             "is very similar to and slightly larger than H. americana, but their distributions are different. "
             "Members of this family all produce hydrogen cyanide, a potent antipredator toxin."},
    {"_id": 9, "title": "Physics World",
     "text": "Physics World is the membership magazine of the Institute of Physics, one of the largest physical "
             "societies in the world. It is an international monthly magazine covering all areas of physics, both "
             "pure and applied, and is aimed at physicists in research, industry and education worldwide. It was "
             "launched in 1988 by IOP Publishing Ltd and has established itself as one of the world's leading "
             "physics magazines. The magazine is sent free to members of the Institute of Physics, who can also "
             "access a digital edition of the magazine, although selected articles can be read by anyone for free "
             "online. It was redesigned in September 2005 and has an audited circulation of just under 35000. The "
             "current editor is Matin Durrani. Also on the team are Dens Milne (associate editor), Michael Banks "
             "(news editor), Louise Mayor (features editor) and Margaret Harris (reviews and careers editor). Hamish "
             "Johnston is the editor of the magazine's website physicsworld.com and James Dacey is its reporter."},
    {"_id": 10, "title": "Mallacoota, Victoria",
     "text": "Mallacoota is a small town in the East Gippsland region of Victoria, Australia. At the 2006 census, "
             "Mallacoota had a population of 972. At holiday times, particularly Easter and Christmas, the population "
             "increases by about 8,000. It is one of the most isolated towns in the state of Victoria, 25 kilometres "
             "off the Princes Highway and 523 kilometres (325 mi) from Melbourne. It is 526 kilometres (327 mi) from "
             "Sydney, New South Wales. It is halfway between Melbourne and Sydney when travelling via Princes "
             "Highway, though that is a long route between Australia's two main cities. It is the last official "
             "township on Victoria's east coast before the border with New South Wales. Mallacoota has a regional "
             "airport (Mallacoota Airport) YMCO (XMC) consisting of a grassed field for private light planes. It is "
             "known for its wild flowers, abalone industry, the inlet estuary consisting of Top Lake and Bottom "
             "Lake, and Croajingolong National Park that surround it. It is a popular and beautiful holiday spot for "
             "boating, fishing, walking the wilderness coast, swimming, birdwatching, and surfing. The Mallacoota "
             "Arts Council runs events throughout each year. Mallacoota Inlet is one of the main villages along the "
             "wilderness coast walk from NSW to Victoria, Australia."},
]


# --------------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------------

def query_ids(coll, search, filter=None, extra=None, limit=None):
    """jstests/libs/fts.js ``queryIDS``: ids of the $text matches, best textScore first."""
    query = {"$text": {"$search": search, **(extra or {})}, **(filter or {})}
    cursor = coll.find(query, {"score": {"$meta": "textScore"}}).sort([("score", {"$meta": "textScore"})])
    if limit:
        cursor = cursor.limit(limit)
    return [d["_id"] for d in cursor]


def error_code(fn) -> int:
    with pytest.raises(OperationFailure) as e:
        fn()
    return e.value.code


def index_names(coll) -> list[str]:
    return sorted(s["name"] for s in coll.list_indexes())


# --------------------------------------------------------------------------------------------------
# fts1.js .. fts5.js: basic matching, weights on non-key fields, arrays, trailing fields
# --------------------------------------------------------------------------------------------------

def test_fts1_any_term_matches_and_index_version(db):
    coll = db.text1
    coll.create_index([("x", "text")], name="x_text")
    assert query_ids(coll, "az") == []
    coll.insert_many([{"_id": 1, "x": "az b c"}, {"_id": 2, "x": "az b"}, {"_id": 3, "x": "b c"},
                      {"_id": 4, "x": "b c d"}])
    assert sorted(query_ids(coll, "c az")) == [1, 2, 3, 4]
    assert query_ids(coll, "d") == [4]
    spec = next(s for s in coll.list_indexes() if s["name"] == "x_text")
    assert spec["textIndexVersion"] >= 1


@pytest.mark.parametrize("trailing", [False, True], ids=["fts2", "fts3"])
def test_fts2_fts3_weights_name_fields_outside_the_key(db, trailing):
    coll = db.text2
    coll.insert_many([{"_id": 1, "x": "az b x", "y": "c d m", "z": 1}, {"_id": 2, "x": "c d y", "y": "az b n", "z": 2}])
    key = [("x", "text"), ("z", 1)] if trailing else [("x", "text")]
    coll.create_index(key, weights={"x": 10, "y": 1})
    assert query_ids(coll, "az") == [1, 2]
    assert query_ids(coll, "d") == [2, 1]
    assert query_ids(coll, "x") == [1]
    assert query_ids(coll, "y") == [2]
    assert query_ids(coll, "az", {"z": 1}) == [1]
    assert query_ids(coll, "d", {"z": 1}) == [1]


@pytest.mark.parametrize("nested", [False, True], ids=["fts4", "fts5"])
def test_fts4_fts5_arrays_of_strings_and_of_subdocuments(db, nested):
    coll = db.text4
    if nested:
        docs = [{"_id": 1, "x": [{"a": "az"}, {"a": "b"}, {"a": "x"}], "y": ["c", "d", "m"], "z": 1},
                {"_id": 2, "x": [{"a": "c"}, {"a": "d"}, {"a": "y"}], "y": ["az", "b", "n"], "z": 2}]
    else:
        docs = [{"_id": 1, "x": ["az", "b", "x"], "y": ["c", "d", "m"], "z": 1},
                {"_id": 2, "x": ["c", "d", "y"], "y": ["az", "b", "n"], "z": 2}]
    coll.insert_many(docs)
    coll.create_index([("y", "text"), ("z", 1)], weights={"x.a" if nested else "x": 10})
    assert query_ids(coll, "az") == [1, 2]
    assert query_ids(coll, "d") == [2, 1]
    assert query_ids(coll, "x") == [1]
    assert query_ids(coll, "y") == [2]
    assert query_ids(coll, "az", {"z": 1}) == [1]
    assert query_ids(coll, "d", {"z": 1}) == [1]


def test_fts6_text_inside_or_with_an_indexed_sibling(db):
    coll = db.fts6
    coll.create_index([("a", 1)])
    coll.create_index([("b", "text")])
    coll.insert_many([{"_id": 1, "a": 0}, {"_id": 2, "a": 0, "b": "foo"}])
    assert [d["_id"] for d in coll.find({"a": 0, "$or": [{"_id": 2}, {"$text": {"$search": "foo"}}]})] == [2]


# --------------------------------------------------------------------------------------------------
# fts_array.js, fts_partition_no_multikey.js, fts_dotted_prefix_fields.js, fts_trailing_fields.js
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("doc", [
    {"a": {"b": []}}, {"a": {"b": [1]}}, {"a": {"b": [1, 2]}}, {"a": []}, {"a": [{"b": 1}]}, {"a": [{"b": 1}, {"b": 2}]},
])
def test_fts_array_leading_field_cannot_hold_an_array(db, doc):
    db.arr.create_index([("a.b", 1), ("words", "text")])
    with pytest.raises(WriteError) as e:
        db.arr.insert_one({**doc, "words": "omnibus"})
    assert e.value.code == CANNOT_BUILD_INDEX_KEYS


@pytest.mark.parametrize("doc", [
    {"y": {"z": []}}, {"y": {"z": [1]}}, {"y": {"z": [1, 2]}}, {"y": []}, {"y": [{"z": 1}]}, {"y": [{"z": 1}, {"z": 2}]},
])
def test_fts_array_trailing_field_cannot_hold_an_array(db, doc):
    db.arr.create_index([("words", "text"), ("y.z", 1)])
    with pytest.raises(WriteError) as e:
        db.arr.insert_one({"words": "macerate", **doc})
    assert e.value.code == CANNOT_BUILD_INDEX_KEYS


def test_fts_array_positional_prefix_paths_are_allowed(db):
    coll = db.arr
    coll.create_index([("a.0", 1), ("words", "text")])
    coll.insert_one({"a": [0, 1, 2], "words": "dander"})
    assert coll.find_one({"a.0": 0, "$text": {"$search": "dander"}}, {"_id": 0, "a": 1, "words": 1}) == \
        {"a": [0, 1, 2], "words": "dander"}
    with pytest.raises(WriteError) as e:
        coll.insert_one({"a": [[8, 9], 1, 2], "words": "dander"})
    assert e.value.code == CANNOT_BUILD_INDEX_KEYS
    coll.drop()
    coll.create_index([("a.0.1", 1), ("words", "text")])
    coll.insert_one({"a": [[8, 9], 1, 2], "words": "dander"})
    assert coll.find_one({"a.0.1": 9, "$text": {"$search": "dander"}}, {"_id": 0, "a": 1, "words": 1}) == \
        {"a": [[8, 9], 1, 2], "words": "dander"}


@pytest.mark.parametrize("x", [[], [1], [1, 2]])
def test_fts_partition_no_multikey(db, x):
    db.p.create_index([("x", 1), ("y", "text")])
    db.p.insert_one({"x": 5, "y": "this is fun"})
    with pytest.raises(WriteError):
        db.p.insert_one({"x": x, "y": "this is fun"})


def test_fts_dotted_prefix_fields(db):
    coll = db.dotted
    coll.create_index([("a.x", 1), ("a.y", 1), ("b.x", 1), ("b.y", 1), ("words", "text")])
    coll.insert_many([{"a": {"x": 1, "y": 2}, "b": {"x": 3, "y": 4}, "words": "lorem ipsum dolor sit"},
                      {"a": {"x": 1, "y": 2}, "b": {"x": 5, "y": 4}, "words": "lorem ipsum dolor sit"}])
    q = {"$text": {"$search": "lorem ipsum"}, "a.x": 1, "a.y": 2, "b.x": 3, "b.y": 4}
    assert len(list(coll.find(q))) == 1


def test_fts_trailing_fields_predicates(db):
    coll = db.trailing
    coll.create_index([("a", 1), ("b", "text"), ("c", 1)])
    coll.insert_one({"a": 2, "b": "lorem ipsum"})
    text = {"$search": "lorem"}
    assert len(list(coll.find({"a": 2, "$text": text, "c": {"$exists": True}}))) == 0
    assert len(list(coll.find({"a": 2, "$text": text, "c": None}))) == 1
    assert len(list(coll.find({"a": 2, "$text": text, "c": {"$exists": False}}))) == 1
    coll.drop()
    coll.create_index([("a", 1), ("b", "text"), ("c.d", 1)])
    coll.insert_one({"a": 2, "b": "lorem ipsum", "c": {"d": 3}})
    assert len(list(coll.find({"a": 2, "$text": text, "c": {"$elemMatch": {"d": 3}}}))) == 0


def test_fts_trailing_fields_array_equality_on_the_prefix(db):
    coll = db.trailing
    coll.create_index([("a", 1), ("b", "text"), ("c.d", 1)])
    coll.insert_one({"a": 2, "b": "lorem ipsum", "c": {"d": 3}})
    assert len(list(coll.find({"a": [1, 2], "$text": {"$search": "lorem"}}))) == 0


# --------------------------------------------------------------------------------------------------
# fts_partition1.js: a compound text index needs equality on its prefix
# --------------------------------------------------------------------------------------------------

def test_fts_partition1_prefix_equality_required(db):
    t = db.part
    t.insert_many([{"_id": 1, "x": 1, "y": "foo"}, {"_id": 2, "x": 1, "y": "bar"}, {"_id": 3, "x": 2, "y": "foo"},
                   {"_id": 4, "x": 2, "y": "bar"}])
    t.create_index([("x", 1), ("y", "text")])
    # (the jstest asserts a throw; mongod's planner answers 291 NoQueryExecutionPlans)
    assert error_code(lambda: list(t.find({"$text": {"$search": "foo"}}))) == 291
    assert query_ids(t, "foo", {"x": 1}) == [1]
    res = list(t.find({"$text": {"$search": "foo"}, "x": 1}, {"score": {"$meta": "textScore"}}))
    assert res[0]["score"] > 0
    res = list(t.find({"$text": {"$search": "foo", "$language": "english"}, "x": 1}, {"score": {"$meta": "textScore"}}))
    assert res[0]["score"] > 0


# --------------------------------------------------------------------------------------------------
# fts_blog.js, fts_blogwild.js, fts_phrase.js: weights and score order
# --------------------------------------------------------------------------------------------------

BLOG = [
    {"_id": 1, "title": "my blog post", "text": "this is a new blog i am writing. yay"},
    {"_id": 2, "title": "my 2nd post", "text": "this is a new blog i am writing. yay"},
    {"_id": 3, "title": "knives are Fun", "text": "this is a new blog i am writing. yay"},
]


def test_fts_blog_title_weight_orders_results(db):
    t = db.blog
    t.insert_many(BLOG)
    t.create_index([("title", "text"), ("text", "text")], weights={"title": 10})
    res = list(t.find({"$text": {"$search": "blog"}}, {"score": {"$meta": "textScore"}})
               .sort([("score", {"$meta": "textScore"})]))
    assert len(res) == 3 and res[0]["_id"] == 1
    res = list(t.find({"$text": {"$search": "write"}}, {"score": {"$meta": "textScore"}}))
    assert len(res) == 3 and res[0]["score"] == res[1]["score"] == res[2]["score"]


def test_fts_blogwild_string_wildcard_weights(db):
    t = db.blogwild
    t.insert_many([
        {"_id": 1, "title": "my blog post", "text": "this is a new blog i am writing. yay eliot"},
        {"_id": 2, "title": "my 2nd post", "text": "this is a new blog i am writing. yay"},
        {"_id": 3, "title": "knives are Fun for writing eliot", "text": "this is a new blog i am writing. yay"},
    ])
    t.create_index([("dummy", "text")], weights="$**")
    keys = sorted(tuple(s["key"].items()) for s in t.list_indexes())
    assert keys == [(("_fts", "text"), ("_ftsx", 1)), (("_id", 1),)]
    assert len(list(t.find({"$text": {"$search": "blog"}}))) == 3
    assert len(list(t.find({"$text": {"$search": "write"}}))) == 3
    t.drop_index("dummy_text")
    assert index_names(t) == ["_id_"]
    t.create_index([("dummy", "text")], weights={"$**": 1, "title": 2})
    assert query_ids(t, "write")[0] == 3 and len(query_ids(t, "write")) == 3
    assert query_ids(t, "blog")[0] == 1 and len(query_ids(t, "blog")) == 3
    assert query_ids(t, "eliot")[0] == 3 and len(query_ids(t, "eliot")) == 2


@pytest.mark.parametrize("search", ["blog write", "write blog"])
def test_fts_phrase_weighted_title_dominates(db, search):
    t = db.phrase
    t.insert_many([
        {"_id": 1, "title": "my blog post", "text": "i am writing a blog. yay"},
        {"_id": 2, "title": "my 2nd post", "text": "this is a new blog i am typing. yay"},
        {"_id": 3, "title": "knives are Fun", "text": "this is a new blog i am writing. yay"},
    ])
    t.create_index([("title", "text"), ("text", "text")], weights={"title": 10})
    res = list(t.find({"$text": {"$search": search}}, {"score": {"$meta": "textScore"}})
               .sort([("score", {"$meta": "textScore"})]))
    assert len(res) == 3 and res[0]["_id"] == 1
    assert res[0]["score"] > res[1]["score"] * 2


def test_fts_index_wildcard_and_weight(db):
    coll = db.wild
    coll.create_index([("$**", "text")], name="fullTextIndex", weights={"name": 500}, default_language="english")
    coll.insert_many([{"name": "Spot", "guardian": "Kevin"}, {"name": "Kevin", "guardian": "Spot"}])
    pipeline = [{"$match": {"$text": {"$search": "Kevin"}}}, {"$sort": {"score": {"$meta": "textScore"}}},
                {"$project": {"name": 1, "score": {"$meta": "textScore"}}}]
    res = list(coll.aggregate(pipeline))
    assert res[0]["score"] > res[1]["score"] and res[0]["name"] == "Kevin"
    coll.drop()
    coll.create_index([("$**", "text")], name="fullTextIndex", weights={"name": 500, "tag": 250},
                      default_language="english")
    coll.insert_many([
        {"name": "Spot", "guardian": "Kevin", "special": "Dog", "tag": "Nice"},
        {"name": "Kevin", "guardian": "Spot", "special": "Human", "tag": "Mean"},
        {"name": "Whiskers", "guardian": "Carl", "special": "Cat", "tag": "Kevin"},
        {"name": "McFlufferson", "guardian": "Steve", "special": "Kevin", "tag": "Fluffy"},
    ])
    res = list(coll.aggregate(pipeline))
    assert [res[0]["name"], res[1]["name"]] == ["Kevin", "Whiskers"]
    assert res[0]["score"] > res[1]["score"] and res[2]["score"] == res[3]["score"]


# --------------------------------------------------------------------------------------------------
# fts_mix.js: a Wikipedia sample: weights, stemming, languages, limits, projections, negation, phrases
# --------------------------------------------------------------------------------------------------

@pytest.fixture
def mix(db):
    db.mix.insert_many([dict(d) for d in MIX_DOCS])
    return db.mix


def test_fts_mix_indexing_and_weighting(mix):
    mix.create_index([("title", "text")])
    res = list(mix.find({"$text": {"$search": "Victoria"}}))
    assert [d["_id"] for d in res] == [10]
    mix.drop_indexes()
    mix.create_index([("title", "text"), ("text", "text")], weights={"title": 10})
    assert sorted(query_ids(mix, "members physics")) == [7, 8, 9]
    mix.drop_indexes()
    mix.create_index([("$**", "text")])
    assert sorted(query_ids(mix, "family tea estate")) == [2, 7, 8]
    mix.drop_indexes()
    mix.create_index([("$**", "text")], weights={"$**": 10, "text": 2})
    assert sorted(query_ids(mix, "Olympic Games gold medal")) == [5, 7]


@pytest.fixture
def mix_wild(mix):
    mix.create_index([("$**", "text")], weights={"title": 10})
    return mix


def test_fts_mix_stemming_and_language(mix_wild):
    ids = lambda s: sorted(d["_id"] for d in mix_wild.find({"$text": {"$search": s}}))  # noqa: E731
    assert ids("member") == ids("members") and ids("member")
    assert ids("magazine's") == ids("magazine") == [9]
    assert error_code(lambda: mix_wild.find_one({"$text": {"$search": "member", "$language": "spanglish"}})) \
        == BAD_VALUE
    mix_wild.find_one({"$text": {"$search": "member", "$language": "english"}})


def test_fts_mix_limit(mix_wild):
    assert query_ids(mix_wild, "rural river dam", limit=1) == [2]
    assert len(list(mix_wild.find({"$text": {"$search": "united kingdom british princes"}}).limit(1))) == 1
    assert len(list(mix_wild.find({"$text": {"$search": "united kingdom british princes"}}))) == 4


def test_fts_mix_projection(mix_wild):
    res = list(mix_wild.find({"$text": {"$search": "Morten Jensen"}}, {"title": 1}))
    assert len(res) == 1 and res[0]["_id"] == 5 and "text" not in res[0] and res[0]["title"]
    res = list(mix_wild.find({"$text": {"$search": "handball"}}, {"text": 0}))
    assert len(res) == 1 and res[0]["_id"] == 4 and "text" not in res[0] and res[0]["title"]
    res = list(mix_wild.find({"$text": {"$search": "Mahim Bora"}}, {"_id": 0, "title": 1}))
    assert res == [{"title": "Mahim Bora"}]


def test_fts_mix_negation_and_phrases(mix_wild):
    assert query_ids(mix_wild, "United -Kingdom") == [8]
    assert query_ids(mix_wild, "Linn-Kristin") == [4]
    assert query_ids(mix_wild, '"Summer Olympics"') == [7]
    assert query_ids(mix_wild, '"wild flowers" Sydney') == [10]
    assert query_ids(mix_wild, '"industry" -Melbourne -Physics') == [3]


def test_fts_mix_edge_cases_and_filters(mix_wild):
    assert list(mix_wild.find({"$text": {"$search": ""}})) == []
    assert list(mix_wild.find({"$text": {"$search": " "}})) == []
    assert query_ids(mix_wild, "Mahim") == [2]
    assert query_ids(mix_wild, "Mahim", {"_id": 2}) == [2]
    assert query_ids(mix_wild, "Mahim", {"_id": 1}) == []
    assert query_ids(mix_wild, "Mahim", {"_id": {"$gte": 4}}) == []
    assert query_ids(mix_wild, "Mahim", {"_id": {"$lte": 4}}) == [2]
    assert query_ids(mix_wild, "members", {"title": {"$regex": "Phy.*", "$options": "i"}}) == [9]


# --------------------------------------------------------------------------------------------------
# case and diacritic sensitivity (fts_casesensitive.js, fts_diacritic*.js)
# --------------------------------------------------------------------------------------------------

QUICK = "The Quick Brown Fox Jumps Over The Lazy Dog"
PT = "O próximo Vôo à Noite sobre o Atlântico, Põe Freqüentemente o único Médico."
PT_LOWER = "O próximo vôo à noite sobre o Atlântico, põe freqüentemente o único médico."


@pytest.mark.parametrize("search,expected", [
    ("The quick Brown", [0]), ("Jumped", [0]), ('"Quick"', [0]), ('"Fox" Jumped', [0]),
    ('"Fox Jumps" "Over The"', [0]), ('"Fox Jumps" -"over the"', [0]),
    ("The", []), ("quick", []), ("The quick brown", []), ("The -quick -brown", []), ("The quick -brown", []),
    ("he Quic", []), ('"over the"', []), ('"Fox Jumps" -"Over The"', []),
])
def test_fts_casesensitive(db, search, expected):
    db.cs.insert_one({"_id": 0, "a": QUICK})
    db.cs.create_index([("a", "text")])
    assert query_ids(db.cs, search, extra={"$caseSensitive": True}) == expected


def test_fts_case_and_diacritic_options_must_be_booleans(db):
    db.cs.insert_one({"_id": 0, "a": QUICK})
    db.cs.create_index([("a", "text")])
    for option in ("$caseSensitive", "$diacriticSensitive"):
        code = error_code(lambda: query_ids(db.cs, "hello", extra={option: "invalid"}))  # noqa: B023
        assert code == 14  # TypeMismatch "$caseSensitive requires a boolean value"


@pytest.mark.parametrize("search,expected", [
    ("proximo voo a", [0]), ("átlántico", [0]), ('"proxIMO"', [0]), ('"poé" atlânTico', [0]),
    ('"próximo voo" "unico médico"', [0]), ('"proximo voo" -"unico atlantico"', [0]),
    ("À", []), ("próximoo", []), ("proximoo vvôo àa", []), ("À -próximo -Vôo", []), ("à proximo -voo", []),
    ("mo vo", []), ('"unico atlantico"', []), ('"próximo Vôo" -"unico medico"', []),
])
def test_fts_diacritic_and_caseinsensitive(db, search, expected):
    db.pt.insert_one({"_id": 0, "a": PT})
    db.pt.create_index([("a", "text")], default_language="portuguese")
    assert query_ids(db.pt, search) == expected


@pytest.mark.parametrize("search,expected", [
    ("próximo vôo à", [0]), ("Atlântico", [0]), ('"próximo"', [0]), ('"Põe" Atlântico', [0]),
    ('"próximo Vôo" "único Médico"', [0]), ('"próximo Vôo" -"único médico"', [0]),
    ("À", []), ("Próximo", []), ("proximo vôo à", []), ("À -próximo -Vôo", []), ("à proximo -Vôo", []),
    ("mo Vô", []), ('"único médico"', []), ('"próximo Vôo" -"único Médico"', []),
])
def test_fts_diacritic_and_casesensitive(db, search, expected):
    db.pt.insert_one({"_id": 0, "a": PT})
    db.pt.create_index([("a", "text")], default_language="portuguese")
    assert query_ids(db.pt, search, extra={"$diacriticSensitive": True, "$caseSensitive": True}) == expected


@pytest.mark.parametrize("search,expected", [
    ("PRÓXIMO VÔO À", [0]), ("atlântico", [0]), ('"próximo"', [0]), ('"põe" atlântico', [0]),
    ('"próximo vôo" "único médico"', [0]), ('"próximo vôo" -"unico médico"', [0]),
    ("à", []), ("proximo", []), ("proximo voo à", []), ("à -PRÓXIMO -vôo", []), ("à proximo -vôo", []),
    ("mo vô", []), ('"unico medico"', []), ('"próximo vôo" -"único médico"', []),
])
def test_fts_diacriticsensitive(db, search, expected):
    db.pt.insert_one({"_id": 0, "a": PT_LOWER})
    db.pt.create_index([("a", "text")], default_language="portuguese")
    assert query_ids(db.pt, search, extra={"$diacriticSensitive": True}) == expected


@pytest.mark.parametrize("search,expected", [
    ("próximo vôo à", [0]), ("atlântico", [0]), ('"próxIMO"', [0]), ('"põe" atlânTico', [0]),
    ('"próximo vôo" "único médico"', [0]), ('"próximo vôo" -"único Atlântico"', [0]),
    ("proximo voo a", []), ("átlántico", []), ('"proxIMO"', []), ('"poé" atlânTico', []),
    ('"próximo voo" "unico médico"', []), ('"próximo Vôo" -"único Médico"', []),
])
def test_fts_index_version2_keeps_diacritics_and_folds_ascii_case(db, search, expected):
    db.v2.insert_one({"_id": 0, "a": PT})
    db.v2.create_index([("a", "text")], default_language="portuguese", textIndexVersion=2)
    assert query_ids(db.v2, search) == expected


def test_fts_index_version2_listing_and_diacritic_option(db):
    db.v2.insert_one({"_id": 0, "a": "Ça va"})
    db.v2.create_index([("a", "text")], textIndexVersion=2)
    assert next(s for s in db.v2.list_indexes() if s["name"] == "a_text")["textIndexVersion"] == 2
    assert query_ids(db.v2, "ÇA", extra={"$caseSensitive": True}) == []
    assert query_ids(db.v2, "Ça", extra={"$caseSensitive": True}) == [0]
    assert error_code(lambda: query_ids(db.v2, "va", extra={"$diacriticSensitive": True})) == BAD_VALUE


# --------------------------------------------------------------------------------------------------
# fts_spanish.js and languages (fts_index3.js parts 7-12)
# --------------------------------------------------------------------------------------------------

def test_fts_spanish_default_language_and_override(db):
    coll = db.spanish
    coll.insert_many([
        {"_id": 1, "title": "mi blog", "text": "Este es un blog de prueba"},
        {"_id": 2, "title": "mi segundo post", "text": "Este es un blog de prueba"},
        {"_id": 3, "title": "cuchillos son divertidos", "text": "este es mi tercer blog stemmed"},
        {"_id": 4, "language": "en", "title": "My fourth blog", "text": "This stemmed blog is in english"},
    ])
    coll.create_index([("title", "text"), ("text", "text")], weights={"title": 10}, default_language="es")
    assert coll.count_documents({"$text": {"$search": "blog"}}) == 4
    assert query_ids(coll, "stem") == [4]
    assert query_ids(coll, "stemmed") == [3]
    assert query_ids(coll, "stemmed", extra={"$language": "en"}) == [4]
    assert sorted(query_ids(coll, "prueba")) == [1, 2]
    with pytest.raises(WriteError):
        coll.insert_one({"_id": 5, "language": "spanglish", "title": "", "text": ""})
    coll.drop_indexes()
    assert error_code(lambda: coll.create_index([("title", "text"), ("text", "text")],
                                                default_language="spanglish")) == CANNOT_CREATE_INDEX


@pytest.mark.parametrize("key", [[("a", "text")], [("$**", "text")]], ids=["field", "wildcard"])
@pytest.mark.parametrize("override", [None, "idioma"])
def test_fts_index3_changing_the_language_restems(db, key, override):
    coll = db.lang
    field = override or "language"
    coll.create_index(key, **({"language_override": override} if override else {}))
    coll.insert_one({"a": "testing", field: "es"})
    count = lambda lang: len(list(coll.find({"$text": {"$search": "testing", "$language": lang}})))  # noqa: E731
    assert (count("es"), count("en")) == (1, 0)
    coll.update_one({}, {"$set": {field: "en"}})
    assert (count("es"), count("en")) == (0, 1)


@pytest.mark.parametrize("key", [[("a.b", "text")], [("$**", "text")]], ids=["field", "wildcard"])
def test_fts_index3_nested_language_field_overrides(db, key):
    coll = db.nested
    coll.create_index(key)
    coll.insert_one({"a": {"b": "testing", "language": "es"}})
    count = lambda lang: len(list(coll.find({"$text": {"$search": "testing", "$language": lang}})))  # noqa: E731
    assert (count("es"), count("en")) == (1, 0)
    coll.update_one({}, {"$set": {"a.language": "en"}})
    assert (count("es"), count("en")) == (0, 1)


def test_fts_index3_dotted_and_dollar_field_names_are_not_indexed(db):
    db.d1.create_index([("a.b", "text")])
    db.d1.insert_one({"a.b": "ignored"})
    assert list(db.d1.find({"$text": {"$search": "ignored"}})) == []
    db.d2.create_index([("$**", "text")])
    db.d2.insert_many([{"a.b": "ignored"}, {"$personal": "ignored"}])
    assert list(db.d2.find({"$text": {"$search": "ignored"}})) == []


@pytest.mark.parametrize("key,match,update", [
    ([("a", "text")], {}, {"a": "world"}),
    ([("$**", "text")], {}, {"a": "world"}),
])
def test_fts_index3_updated_text_is_reindexed(db, key, match, update):
    coll = db.upd
    coll.create_index(key)
    coll.insert_one({"a": "hello"})
    assert len(list(coll.find({"$text": {"$search": "hello"}}))) == 1
    coll.update_one({}, {"$set": update})
    assert len(list(coll.find({"$text": {"$search": "hello"}}))) == 0
    assert len(list(coll.find({"$text": {"$search": "world"}}))) == 1


@pytest.mark.parametrize("key,field,doc", [
    ([("a", 1), ("b", "text")], "a", {"a": 1, "b": "hello"}),
    ([("a", 1), ("$**", "text")], "a", {"a": 1, "b": "hello"}),
    ([("a", "text"), ("b", 1)], "b", {"a": "hello", "b": 1}),
    ([("$**", "text"), ("b", 1)], "b", {"a": "hello", "b": 1}),
])
def test_fts_index3_updated_prefix_and_suffix_fields(db, key, field, doc):
    coll = db.upd
    coll.create_index(key)
    coll.insert_one(doc)
    count = lambda v: len(list(coll.find({field: v, "$text": {"$search": "hello"}})))  # noqa: E731
    assert count(1) == 1
    coll.update_one({}, {"$set": {field: 2}})
    assert (count(1), count(2)) == (0, 1)


def test_fts_index2_rename_keeps_the_text_index(db, client):
    db.fts_index2.insert_one({"a": {"b": "some content"}})
    db.fts_index2.create_index([("$**", "text")])
    assert db.fts_index2.count_documents({"$text": {"$search": "content"}}) == 1
    client.admin.command("renameCollection", f"{db.name}.fts_index2", to=f"{db.name}.fts_index2.renamed")
    assert db["fts_index2.renamed"].count_documents({"$text": {"$search": "content"}}) == 1


# --------------------------------------------------------------------------------------------------
# fts_index.js: spec validation, the language_override schema, one text index, large keys, weights
# --------------------------------------------------------------------------------------------------

def test_fts_index_default_language_validated(db):
    db.i1.create_index([("a", "text")], name="textIndex", default_language="spanish")
    assert "textIndex" in index_names(db.i1)
    assert error_code(lambda: db.i2.create_index([("a", "text")], name="textIndex",
                                                 default_language="spanglish")) == CANNOT_CREATE_INDEX
    assert "textIndex" not in index_names(db.i2)


@pytest.mark.parametrize("key", [
    [("a.$**", "text")], [("a.$custom", "text")], [("_fts", 1)], [("_fts", "text")],
])
def test_fts_index_invalid_keys_fail(db, key):
    with pytest.raises(OperationFailure):
        db.i3.create_index(key, name="textIndex")
    assert "textIndex" not in index_names(db.i3)


def test_fts_index_wildcard_key_is_valid(db):
    db.i4.create_index([("$**", "text")], name="textIndex")
    assert "textIndex" in index_names(db.i4)


def test_fts_index_language_override_schema(db):
    db.l1.insert_many([{"a": ""}, {"a": "", "language": "spanish"}])
    db.l1.create_index([("a", "text")])
    db.l2.insert_one({"a": "", "language": "spanglish"})
    with pytest.raises(OperationFailure):
        db.l2.create_index([("a", "text")])
    db.l3.create_index([("a", "text")])
    db.l3.insert_many([{"a": ""}, {"a": "", "language": "spanish"}])
    with pytest.raises(WriteError):
        db.l3.insert_one({"a": "", "language": "spanglish"})


def test_fts_index_equivalent_specs_are_no_ops(db):
    coll = db.eq
    db.create_collection("eq")
    coll.create_index([("a", 1), ("b", "text"), ("c", 1)])
    assert len(index_names(coll)) == 2
    coll.create_index([("a", 1), ("b", "text"), ("c", 1)])
    coll.create_index([("a", 1), ("b", "text"), ("c", 1)], background=True)
    coll.create_index([("a", 1), ("b", "text"), ("c", 1)], default_language="english")
    coll.create_index([("a", 1), ("b", "text"), ("c", 1)], language_override="language")
    assert len(index_names(coll)) == 2
    assert error_code(lambda: coll.create_index([("a", 1), ("b", 1), ("c", "text")])) == CANNOT_CREATE_INDEX
    assert error_code(lambda: coll.create_index([("a", 1), ("_fts", "text"), ("_ftsx", 1), ("c", 1)],
                                                weights={"b": 1})) == 85  # IndexOptionsConflict
    assert len(index_names(coll)) == 2


def test_fts_index_text_index_version_differences_are_equivalent(db):
    coll = db.eqv
    db.create_collection("eqv")
    coll.create_index([("a", 1), ("b", "text"), ("c", 1)])
    coll.create_index([("a", 1), ("b", "text"), ("c", 1)], textIndexVersion=2)
    assert len(index_names(coll)) == 2


@pytest.mark.parametrize("key,options", [
    ([("a", 1), ("_fts", "text"), ("_ftsx", 1), ("c", 1)], {"weights": {"d": 1}}),
    ([("a", 1), ("b", "text"), ("c", 1)], {"default_language": "none"}),
    ([("a", 1), ("b", "text"), ("c", 1)], {"language_override": "idioma"}),
    ([("a", 1), ("b", "text"), ("c", 1)], {"weights": {"d": 1}}),
    ([("a", 1), ("b", "text"), ("d", 1)], {}),
    ([("a", 1), ("d", "text"), ("c", 1)], {}),
    ([("b", "text")], {}),
    ([("b", "text"), ("c", 1)], {}),
    ([("a", 1), ("b", "text")], {}),
])
def test_fts_index_a_second_text_index_fails(db, key, options):
    db.two.create_index([("a", 1), ("b", "text"), ("c", 1)])
    with pytest.raises(OperationFailure):
        db.two.create_index(key, **options)
    assert len(index_names(db.two)) == 2


def test_fts_index_large_keys(db):
    coll = db.large
    coll.create_index([("a", "text")])
    coll.insert_many([{"_id": 0, "a": "a" * (1024 * 1024)}, {"_id": 1, "a": "b" * (1024 * 1024)}])
    assert len(list(coll.find({"$text": {"$search": "a" * (1024 * 1024)}}))) == 1


@pytest.mark.parametrize("key,options", [
    ([("a", 1), ("_fts", "text"), ("_ftsx", 1), ("c", 1)], {"weights": {}}),
    ([("a", 1), ("_fts", "text"), ("_ftsx", 1), ("c", 1)], {}),
    ([("a", "text")], {"weights": {"b": 1.7976931348623157e308}}),
    ([("a", "text")], {"weights": {"b": -1.7976931348623157e308}}),
    ([("a", "text"), ("b", 1.7976931348623157e308)], {}),
    ([("a", "text"), ("b", -1.7976931348623157e308)], {}),
    ([("a", "text")], {"weights": {"b": 0.5}}),  # numberInt(0.5) is 0: outside (0, 100000)
    ([("a", "text")], {"weights": {"b": 100000}}),
    ([("a", "text")], {"language_override": "$lang"}),
    ([("a", "text")], {"textIndexVersion": 4}),
    ([("_fts", 1), ("a", "text")], {}),
    ([("a", "text"), ("_ftsx", 1)], {}),
])
def test_fts_index_bad_weights_and_directions(db, key, options):
    db.bad.insert_one({"_id": 0, "a": "abc", "b": 100})
    spec = {"key": dict(key), "name": "bad_text", **options}  # pymongo refuses float directions itself
    assert error_code(lambda: db.command("createIndexes", "bad", indexes=[spec])) == CANNOT_CREATE_INDEX
    assert index_names(db.bad) == ["_id_"]


@pytest.mark.parametrize("weights", [{"d": 1}, "$**", {}, "$foo"])
def test_fts_index_weights_only_on_text_indexes(db, weights):
    assert error_code(lambda: db.nt.create_index([("a", 1), ("c", 1)], weights=weights)) == CANNOT_CREATE_INDEX


# --------------------------------------------------------------------------------------------------
# fts_querylang.js, fts_proj.js, fts_projection.js, fts_score_sort.js, fts_find_and_modify.js
# --------------------------------------------------------------------------------------------------

@pytest.fixture
def content(db):
    db.ql.insert_many([{"_id": 0, "unindexedField": 0, "a": "textual content"},
                       {"_id": 1, "unindexedField": 1, "a": "additional content", "b": -1},
                       {"_id": 2, "unindexedField": 2, "a": "irrelevant content"}])
    db.ql.create_index([("a", "text")])
    return db.ql


Q = {"$text": {"$search": "textual content -irrelevant"}}


def test_fts_querylang_sort_skip_limit_and_filters(content):
    assert list(content.find({"$text": {"$search": "words"}})) == []
    assert sorted(d["_id"] for d in content.find(Q)) == [0, 1]
    assert [d["_id"] for d in content.find(Q).sort("unindexedField", 1)] == [0, 1]
    assert [d["_id"] for d in content.find(Q).sort("unindexedField", 1).skip(1)] == [1]
    assert [d["_id"] for d in content.find(Q).sort("unindexedField", 1).limit(1)] == [0]
    assert [d["_id"] for d in content.find({"$text": {"$search": "content -irrelevant"}, "_id": 1})] == [1]
    assert [d["_id"] for d in content.find({"$text": {"$search": "content -irrelevant"}, "unindexedField": 1})] == [1]
    bad = {"$text": {"$search": "content -irrelevant", "$language": "spanglish"}, "_id": 1}
    assert error_code(lambda: list(content.find(bad))) == BAD_VALUE


def test_fts_querylang_language_option(content):
    assert content.find_one({"$text": {"$search": "contents", "$language": "none"}}) is None
    assert content.find_one({"$text": {"$search": "contents", "$language": "EN"}}) is not None
    assert error_code(lambda: content.find_one({"$text": {"$search": "contents", "$language": "spanglish"}})) \
        == BAD_VALUE


def test_fts_querylang_update_with_text(content):
    content.update_many(Q, {"$set": {"b": 1}})
    assert content.count_documents({"b": 1}) == 2


@pytest.mark.parametrize("filter", [
    {"$nor": [{"$text": {"$search": "a"}}]},
    {"$nor": [{"a": 1}, {"$text": {"$search": "a"}}]},
    {"$and": [{"a": 2}, {"$nor": [{"$or": [{"c": {"$not": {"$ne": 10}}}, {"$text": {"$search": "a"}}]}]}]},
])
def test_fts_querylang_text_under_nor_is_bad_value(content, filter):
    assert error_code(lambda: list(content.find(filter))) == BAD_VALUE


def test_fts_proj_projection_and_missing_text_predicate(db):
    coll = db.proj
    coll.insert_many([{"_id": 1, "x": "a", "y": "b", "z": "c"}, {"_id": 2, "x": "d", "y": "e", "z": "f"},
                      {"_id": 3, "x": "a", "y": "g", "z": "h"}])
    coll.create_index([("x", "text")], default_language="none")
    res = list(coll.find({"$text": {"$search": "a"}}))
    assert len(res) == 2 and res[0]["y"]
    res = list(coll.find({"$text": {"$search": "a"}}, {"x": 1}))
    assert len(res) == 2 and "y" not in res[0]
    assert error_code(lambda: list(coll.find({}, {"score": {"$meta": "textScore"}}))) == UNAVAILABLE_METADATA


@pytest.mark.parametrize("stage", [{"$project": {"score": {"$meta": "textScore"}}},
                                   {"$sort": {"score": {"$meta": "textScore"}}}])
def test_fts_proj_aggregate_meta_without_text_fails(db, stage):
    db.proj.insert_one({"_id": 1, "x": "a"})
    db.proj.create_index([("x", "text")])
    assert error_code(lambda: list(db.proj.aggregate([stage]))) == UNAVAILABLE_METADATA


def test_fts_projection_score_in_several_fields_and_clobbering(content):
    scores = {d["_id"]: d["score"] for d in content.find(Q, {"score": {"$meta": "textScore"}})}
    assert set(scores) == {0, 1} and all(scores.values())
    res = list(content.find(Q, {"otherScore": {"$meta": "textScore"}, "score": {"$meta": "textScore"},
                                "nestedObj.score": {"$meta": "textScore"}}))
    assert len(res) == 2
    for d in res:
        assert math.isclose(d["score"], scores[d["_id"]]) and math.isclose(d["otherScore"], scores[d["_id"]])
        assert math.isclose(d["nestedObj"]["score"], scores[d["_id"]])
    with pytest.raises(OperationFailure):
        list(content.find(Q, {"x.$": {"$meta": "textScore"}}))
    res = list(content.find(Q, {"b": {"$meta": "textScore"}}))
    assert len(res) == 2 and all(math.isclose(d["b"], scores[d["_id"]]) for d in res)


def test_fts_projection_text_under_or_scores(content):
    scores = {d["_id"]: d["score"] for d in content.find(Q, {"score": {"$meta": "textScore"}})}
    res = list(content.find({"$or": [Q, {"_id": 1}]}, {"score": {"$meta": "textScore"}}))
    assert len(res) == 2 and all(math.isclose(d["score"], scores[d["_id"]]) for d in res)


def test_fts_projection_text_under_or_with_unindexed_sibling_fails(content):
    with pytest.raises(OperationFailure) as e:
        list(content.find({"$or": [Q, {"b": 1}]}))
    assert "TEXT" in str(e.value) and "OR" in str(e.value)


@pytest.mark.parametrize("filter,message", [
    ({"$or": [Q, {"b": 1}]}, "Failed to produce a solution for TEXT under OR - other non-TEXT clauses under OR "
                             "have to be indexed as well."),
    ({"a": "x", "$or": [Q, {"b": 1}]}, "No query solutions"),
])
def test_text_under_or_with_unindexed_sibling_is_no_query_execution_plans(content, filter, message):
    # mongod 7.0 query_planner.cpp answers 291 NoQueryExecutionPlans (3.x answered 2 BadValue)
    with pytest.raises(OperationFailure) as e:
        list(content.find(filter))
    assert e.value.code == 291 and e.value.details["errmsg"].endswith(message)


@pytest.mark.parametrize("sort", [
    {"score": {"$meta": "textScore", "extra": 1}}, {"score": {"$meta": "unknown"}},
    {"score": {"$notMeta": "textScore"}}, {"score": "textScore"},
])
def test_fts_score_sort_bad_meta_sorts_fail(content, sort):
    with pytest.raises(OperationFailure):
        list(content.find({"$text": {"$search": "textual content"}}, {"score": {"$meta": "textScore"}})
             .sort(list(sort.items())))


def test_fts_score_sort_orders(content):
    proj = {"score": {"$meta": "textScore"}}
    del_b = lambda docs: [{k: v for k, v in d.items() if k != "b"} for d in docs]  # noqa: E731
    res = del_b(content.find(Q, {"a": 1, **proj}).sort([("score", {"$meta": "textScore"})]))
    assert res == [{"_id": 0, "a": "textual content", "score": 1.5}, {"_id": 1, "a": "additional content", "score": 0.75}]
    res = del_b(content.find(Q, {"a": 1, **proj}).sort([("_id", -1), ("score", {"$meta": "textScore"})]))
    assert res == [{"_id": 1, "a": "additional content", "score": 0.75}, {"_id": 0, "a": "textual content", "score": 1.5}]
    expected = [{"_id": 0, "a": "textual content"}, {"_id": 1, "a": "additional content"}]
    assert list(content.find(Q, {"a": 1}).sort([("score", {"$meta": "textScore"})])) == expected
    assert list(content.aggregate([{"$match": Q}, {"$sort": {"score": {"$meta": "textScore"}}},
                                   {"$project": {"a": 1}}])) == expected
    assert error_code(lambda: list(content.find().sort([("score", {"$meta": "textScore"})]))) == UNAVAILABLE_METADATA


def test_fts_score_sort_on_an_included_or_projected_field(content):
    expected = [{"a": "textual content"}, {"a": "additional content"}]
    assert list(content.find(Q, {"_id": 0, "a": 1}).sort([("a", {"$meta": "textScore"})])) == expected
    assert list(content.aggregate([{"$match": Q}, {"$project": {"_id": 0, "a": 1}},
                                   {"$sort": {"a": {"$meta": "textScore"}}}])) == expected
    q2 = {"$text": {"$search": "additional content -irrelevant"}}
    expected = [{"_id": 0, "a": 0.75}, {"_id": 1, "a": 1.5}]
    assert list(content.find(q2, {"_id": 1, "a": {"$meta": "textScore"}}).sort("a", -1)) == expected
    assert list(content.aggregate([{"$match": q2}, {"$sort": {"a": -1}},
                                   {"$project": {"_id": 1, "a": {"$meta": "textScore"}}}])) == expected
    res = list(content.aggregate([{"$match": Q}, {"$project": {"a": 1, "score": {"$meta": "textScore"}}},
                                  {"$sort": {"score": -1}}]))
    assert res == [{"_id": 0, "a": "textual content", "score": 1.5}, {"_id": 1, "a": "additional content", "score": 0.75}]


@pytest.fixture
def numbers(db):
    db.fam.create_index([("numbers", "text")])
    db.fam.insert_many([{"_id": 1, "numbers": "one"}, {"_id": 2, "numbers": "two"}, {"_id": 3, "numbers": "one two"},
                        {"_id": 4, "numbers": "four"}])
    return db.fam


FOUR, ONE_TWO = {"$text": {"$search": "four"}}, {"$text": {"$search": "one two"}}
BY_SCORE = [("score", {"$meta": "textScore"})]
SCORE = {"score": {"$meta": "textScore"}}


def test_fts_find_and_modify(numbers):
    coll = numbers
    assert coll.find_one_and_delete(FOUR) == {"_id": 4, "numbers": "four"}
    coll.insert_one({"_id": 4, "numbers": "four"})
    assert coll.find_one_and_update(FOUR, [{"$set": {"addedField": 1}}]) == {"_id": 4, "numbers": "four"}
    assert coll.find_one({"_id": 4}) == {"_id": 4, "numbers": "four", "addedField": 1}
    assert coll.find_one_and_update(FOUR, [{"$set": {"addedField": {"$add": ["$addedField", 1]}}}],
                                    return_document=True) == {"_id": 4, "numbers": "four", "addedField": 2}



def test_fts_find_and_modify_projects_the_text_score(numbers):
    assert numbers.find_one_and_delete(FOUR, projection=SCORE) == {"_id": 4, "numbers": "four", "score": 1.1}
    numbers.insert_one({"_id": 4, "numbers": "four"})
    # the old document, then the new one: both with the matched document's score
    assert numbers.find_one_and_update(FOUR, [{"$set": {"addedField": 1}}], projection=SCORE) == \
        {"_id": 4, "numbers": "four", "score": 1.1}
    assert numbers.find_one_and_update(FOUR, [{"$set": {"addedField": {"$add": ["$addedField", 1]}}}],
                                       projection=SCORE, return_document=True) == \
        {"_id": 4, "numbers": "four", "addedField": 2, "score": 1.1}


def test_fts_find_and_modify_sorts_by_the_text_score(numbers):
    coll = numbers
    assert coll.find_one_and_delete(ONE_TWO, sort=BY_SCORE) == {"_id": 3, "numbers": "one two"}
    coll.insert_one({"_id": 3, "numbers": "one two"})
    assert coll.find_one_and_delete(ONE_TWO, projection=SCORE, sort=BY_SCORE) == \
        {"_id": 3, "numbers": "one two", "score": 1.5}
    coll.insert_one({"_id": 3, "numbers": "one two"})
    assert coll.find_one_and_update(ONE_TWO, [{"$set": {"addedField": 1}}], sort=BY_SCORE) == \
        {"_id": 3, "numbers": "one two"}
    assert coll.find_one_and_update(ONE_TWO, [{"$set": {"addedField": {"$add": ["$addedField", 1]}}}],
                                    sort=BY_SCORE, return_document=True) == {"_id": 3, "numbers": "one two",
                                                                             "addedField": 2}
    assert coll.find_one_and_update(ONE_TWO, [{"$set": {"addedField": {"$add": ["$addedField", 1]}}}],
                                    projection=SCORE, sort=BY_SCORE, return_document=True) == \
        {"_id": 3, "numbers": "one two", "addedField": 3, "score": 1.5}


def test_fts_find_and_modify_text_score_without_text(numbers):
    """Without $text: a textScore sort fails 40218 (the query's sort pattern, as find's); a projected score
    is left out (mongod's findAndModify projection checks nothing of the kind)."""
    with pytest.raises(OperationFailure) as info:
        numbers.find_one_and_delete({"_id": 1}, sort=BY_SCORE)
    assert (info.value.code, info.value.details["errmsg"]) == (
        UNAVAILABLE_METADATA, "query requires text score metadata, but it is not available")
    assert numbers.find_one_and_update({"_id": 1}, {"$set": {"x": 1}}, projection=SCORE) == {"_id": 1, "numbers": "one"}
    assert numbers.find_one({"_id": 1}) == {"_id": 1, "numbers": "one", "x": 1}



# --------------------------------------------------------------------------------------------------
# Hypothesis: the matching and scoring rules the jstests rely on, against a reference model
# --------------------------------------------------------------------------------------------------

VOCAB = ["apple", "Apple", "pear", "PLUM", "kiwi", "fig"]


def model_score(text: str, terms: set[str]) -> float:
    """mongod's per-field score (language "none": no stemming, no stop words), summed over ``terms``."""
    tokens = [w.lower() for w in text.split()]
    total = 0.0
    for term in terms:
        n = tokens.count(term)
        if n:
            freq = sum(1 / 2 ** i for i in range(n))
            whole = 1.1 if text.lower() == term else 1.0
            total += freq * (0.5 * n / len(tokens) + 0.5) * whole
    return total


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(docs=st.lists(st.lists(st.sampled_from(VOCAB), max_size=5).map(" ".join), min_size=1, max_size=6),
       pos=st.lists(st.sampled_from(VOCAB), min_size=1, max_size=3),
       neg=st.lists(st.sampled_from(VOCAB), max_size=2))
def test_any_positive_term_no_negated_term_and_score_formula(db, docs, pos, neg):
    """A document matches when it holds a positive term and no negated one; its textScore is the sum
    of mongod's per-term scores (fts_querylang.js / fts_score_sort.js rules)."""
    coll = db.hyp
    coll.create_index([("t", "text")], default_language="none")
    coll.delete_many({})
    coll.insert_many([{"_id": i, "t": t} for i, t in enumerate(docs)])
    search = " ".join(pos + ["-" + w for w in neg])
    got = {d["_id"]: d["s"] for d in coll.find({"$text": {"$search": search}}, {"s": {"$meta": "textScore"}})}
    positive, negative = {w.lower() for w in pos}, {w.lower() for w in neg}
    expected = {}
    for i, text in enumerate(docs):
        words = {w.lower() for w in text.split()}
        if words & positive and not words & negative:
            expected[i] = model_score(text, positive)
    assert set(got) == set(expected)
    for i, score in got.items():
        assert math.isclose(score, expected[i], rel_tol=1e-9), (docs[i], search)


# --------------------------------------------------------------------------------------------------
# jstests/aggregation/bugs/server11675.js: text search inside aggregation answers as find does
# --------------------------------------------------------------------------------------------------

@pytest.fixture
def fruit(db):
    db.fruit.insert_many([{"_id": 1, "text": "apple", "words": 1}, {"_id": 2, "text": "banana", "words": 1},
                          {"_id": 3, "text": "apple banana", "words": 2}, {"_id": 4, "text": "cantaloupe", "words": 1}])
    db.fruit.create_index([("text", "text")])
    return db.fruit


AB = {"$text": {"$search": "apple banana"}}
PROJ_SCORE = {"_id": 1, "score": {"$meta": "textScore"}}
META_SORT = {"score": {"$meta": "textScore"}}


@pytest.mark.parametrize("query", [
    {"query": {}},
    {"query": {"$text": {"$search": "apple"}}},
    {"query": {"_id": 1, "$text": {"$search": "apple"}}},
    {"query": {"$text": {"$search": "apple"}}, "project": PROJ_SCORE},
    {"query": AB, "project": PROJ_SCORE},
    {"query": AB, "project": PROJ_SCORE, "sort": META_SORT},
    {"query": AB, "project": PROJ_SCORE, "sort": META_SORT, "limit": 1},
    {"query": AB, "project": PROJ_SCORE, "sort": META_SORT, "skip": 1},
    {"query": AB, "project": PROJ_SCORE, "sort": META_SORT, "skip": 1, "limit": 1},
])
def test_server11675_aggregate_matches_find(fruit, query):
    cursor = fruit.find(query["query"], query.get("project"))
    pipeline: list[dict] = [{"$match": query["query"]}]
    if "project" in query:
        pipeline.append({"$project": query["project"]})
    if "sort" in query:
        cursor = cursor.sort(list(query["sort"].items()))
        pipeline.append({"$sort": query["sort"]})
    if "skip" in query:
        cursor = cursor.skip(query["skip"])
        pipeline.append({"$skip": query["skip"]})
    if "limit" in query:
        cursor = cursor.limit(query["limit"])
        pipeline.append({"$limit": query["limit"]})
    find_res = list(cursor)
    agg_res = list(fruit.aggregate(pipeline))
    if "sort" not in query:  # unsorted: the same documents (the jstest's docEq on one storage order)
        find_res.sort(key=lambda d: d["_id"])
        agg_res.sort(key=lambda d: d["_id"])
    assert agg_res == find_res


@pytest.mark.parametrize("sort", [
    {"textScore": {"$meta": "textScore", "extra": 1}}, {"textScore": {"$meta": "unknown"}},
    {"textScore": {"$notMeta": "textScore"}}, {"textScore": "textScore"},
])
def test_server11675_bad_meta_sorts_fail(fruit, sort):
    with pytest.raises(OperationFailure):
        list(fruit.aggregate([{"$match": AB}, {"$sort": sort}]))


def test_server11675_meta_sort_without_projection_and_in_expressions(fruit):
    find_res = [{k: v for k, v in d.items() if k != "textScore"}
                for d in fruit.find(AB, {"textScore": {"$meta": "textScore"}}).sort([("textScore", {"$meta": "textScore"})])]
    assert list(fruit.aggregate([{"$match": AB}, {"$sort": {"textScore": {"$meta": "textScore"}}}])) == find_res
    res = list(fruit.aggregate([{"$match": {"_id": 1, "$text": {"$search": "apple"}}},
                                {"$project": {"words": 1, "score": {"$meta": "textScore"},
                                              "wordsTimesScore": {"$multiply": ["$words", {"$meta": "textScore"}]}}}]))
    assert res[0]["wordsTimesScore"] == res[0]["words"] * res[0]["score"]
    res = list(fruit.aggregate([{"$match": {"_id": 1, "$text": {"$search": "apple banana"}}},
                                {"$group": {"_id": {"$meta": "textScore"}, "score": {"$first": {"$meta": "textScore"}}}}]))
    assert res[0]["_id"] == res[0]["score"]


def test_server11675_score_survives_projections_and_unwind(fruit):
    apple = {"$match": {"_id": 1, "$text": {"$search": "apple"}}}
    res = list(fruit.aggregate([apple, {"$project": {"scoreOnShard": {"$meta": "textScore"}}}, {"$limit": 1},
                                {"$project": {"scoreOnShard": 1, "scoreOnMerger": {"$meta": "textScore"}}}]))
    assert res[0]["scoreOnMerger"] == res[0]["scoreOnShard"]
    score = res[0]["scoreOnMerger"]
    res = list(fruit.aggregate([apple, {"$limit": 1}, {"$project": {"scoreOnMerger": {"$meta": "textScore"}}}]))
    assert res[0]["scoreOnMerger"] == score
    res = list(fruit.aggregate([apple, {"$project": {"_id": 1}}, {"$project": {"_id": 1, "score": {"$meta": "textScore"}}}]))
    assert res[0]["score"] == score
    res = list(fruit.aggregate([{"$match": {"_id": 1, "$text": {"$search": "apple banana"}}},
                                {"$group": {"_id": 1, "score": {"$first": {"$meta": "textScore"}}}},
                                {"$project": {"_id": 1, "scoreAgain": {"$meta": "textScore"}}}]))
    assert "scoreAgain" not in res[0]
    fruit.insert_one({"_id": 5, "text": "mango", "words": [1, 2, 3]})
    res = list(fruit.aggregate([{"$match": {"$text": {"$search": "mango"}}},
                                {"$project": {"score": {"$meta": "textScore"}, "_id": 1, "words": 1}},
                                {"$unwind": "$words"}, {"$project": {"scoreAgain": {"$meta": "textScore"}, "score": 1}}]))
    assert len(res) == 3 and all(d["scoreAgain"] == d["score"] for d in res)


def test_server11675_text_in_a_sort_spec(fruit):
    """(A $meta textScore with no $text is test_fts_proj_aggregate_meta_without_text_fails.)"""
    assert error_code(lambda: list(fruit.aggregate([{"$sort": {"$text": {"$search": "apple banana"}}}]))) == 17312


# --------------------------------------------------------------------------------------------------
# error codes a client can meet (mongod 7.0's parseText / TextMatchExpression / FTSIndexFormat)
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text,code", [
    ({"$search": "a", "$foo": 1}, BAD_VALUE),  # "extra fields in $text", after the type checks
    ({"$search": 1, "$foo": 1}, 14),
    ({"$search": "a", "$language": None}, 14),
    ({"$search": "a", "$caseSensitive": 1}, 14),
    ({"$search": "a", "$language": "elvish"}, BAD_VALUE),
])
def test_text_operand_errors(content, text, code):
    assert error_code(lambda: list(content.find({"$text": text}))) == code


def test_missing_text_index_is_reported_before_an_unknown_language(db):
    db.plain.insert_one({"a": "x"})
    assert error_code(lambda: list(db.plain.find({"$text": {"$search": "x", "$language": "elvish"}}))) == 27


def test_array_in_a_prefix_field_message(db):
    db.arr.create_index([("a", 1), ("words", "text")])
    with pytest.raises(WriteError) as e:
        db.arr.insert_one({"_id": 1, "a": [1], "words": "x"})
    assert e.value.details["errmsg"] == \
        "Field 'a' of text index contains an array in document: { _id: 1, a: [ 1 ], words: \"x\" }"


def test_array_in_a_prefix_field_fails_an_index_build_with_cannot_build_index_keys(db):
    db.arr.insert_one({"_id": 1, "a": [1], "words": "x"})
    with pytest.raises(OperationFailure) as e:
        db.arr.create_index([("a", 1), ("words", "text")])
    assert (e.value.code, e.value.details["codeName"]) == (201, "CannotBuildIndexKeys")


def test_a_nested_language_override_must_be_a_known_language(db):
    db.nested.create_index([("a.b", "text")])
    with pytest.raises(WriteError) as e:
        db.nested.insert_one({"a": {"b": "x", "language": "elvish"}})
    assert e.value.code == 17262
    with pytest.raises(WriteError) as e:
        db.nested.insert_one({"a": {"b": "x", "language": 3}})
    assert e.value.code == 17261
