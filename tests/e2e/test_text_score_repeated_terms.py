"""A term repeated any number of times scores like mongod, on insert and on update.

mongod (``FTSSpec::_scoreStringV2``, src/mongo/db/fts/fts_spec.cpp) adds ``1/exp`` for each repeat of a
term, ``exp`` a double doubled every time: past 1,023 repeats it is inf and adds 0.0, so the term's
frequency tends to 2 and a word repeated 209,999 times indexes fine (jstest
noPassthroughWithMongod/external_sort_text_agg.js). Tidemark computed ``1.0 / 2**n`` with an integer
power, which overflowed at the 1,024th repeat: the insert or update of such a document into a
text-indexed collection answered 15 Overflow.

Expected scores here are derived, not recomputed: the frequency 1 + 1/2 + ... + 1/2**(n-1) summed in
doubles is exactly 2 - 2**(1-n) while that fits in 53 bits (n <= 53) and 2.0 after it.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.commands("createIndexes", "insert", "update", "find")

WORDS = ["asdf", "qwer", "zxcv"]  # their own stems, none a stop word


def expected_frequency(n: int) -> float:
    return 2.0 - 2.0 ** (1 - n) if n <= 53 else 2.0


def score_of(coll, _id) -> float:
    [doc] = coll.find({"$text": {"$search": WORDS[0]}, "_id": _id}, {"s": {"$meta": "textScore"}, "t": 0})
    return doc["s"]


@pytest.fixture
def texts(db):
    db.t.create_index([("t", "text")])
    return db.t


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    repeats=st.one_of(st.integers(1, 60), st.integers(1000, 1100), st.integers(1, 5000)),
    words=st.integers(1, len(WORDS)),
    weight=st.sampled_from([1, 3, 10]),
)
def test_any_repeat_count_indexes_and_scores_like_mongod(db, repeats, words, weight):
    db.w.drop()
    db.w.create_index([("t", "text")], weights={"t": weight})
    text = " ".join(WORDS[:words]) + " "
    coeff = 0.5 * repeats / (repeats * words) + 0.5  # every word occurs `repeats` times
    expected = weight * expected_frequency(repeats) * coeff
    db.w.insert_one({"_id": "inserted", "t": text * repeats})
    db.w.insert_one({"_id": "updated", "t": "other"})
    db.w.update_one({"_id": "updated"}, {"$set": {"t": text * repeats}})
    for _id in ("inserted", "updated"):
        assert score_of(db.w, _id) == pytest.approx(expected, rel=1e-15)


def test_past_1023_repeats_a_term_scores_two(texts):
    texts.insert_one({"_id": 1, "t": "asdf " * 1_024})
    texts.insert_one({"_id": 2, "t": "asdf " * 53})
    texts.insert_one({"_id": 3, "t": "x"})
    texts.update_one({"_id": 3}, {"$set": {"t": "asdf " * 1_500}})
    assert score_of(texts, 1) == 2.0
    assert score_of(texts, 2) == 2.0 - 2.0 ** -52
    assert score_of(texts, 3) == 2.0


@pytest.mark.slow
def test_a_word_repeated_as_in_external_sort_text_agg_scores_two(texts):
    texts.insert_one({"_id": 1, "t": "asdf " * 209_999})
    assert score_of(texts, 1) == 2.0
