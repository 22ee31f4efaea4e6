"""The split index layout (dupsort, first component as the LMDB key) answers every scan exactly like
the plain layout: a differential test over random compound keys and random bounds."""

import random

import lmdb
import pytest

from tidemark.storage import indexes
from tidemark.storage.keys import T_NUMBER, T_STRING, encode_key, type_bracket
from tidemark.storage.longkeys import LongKeys


def _value(rng):
    kind = rng.randrange(6)
    if kind == 0:
        return rng.randrange(-3, 4)
    if kind == 1:
        return rng.choice(["", "a", "ab", "abc", "b", "host_1", "host_10", "a\x00b"])
    if kind == 2:
        return {"hostname": f"host_{rng.randrange(4)}", "rack": str(rng.randrange(3))}
    if kind == 3:
        return None
    if kind == 4:
        return rng.choice([1.5, -2.25, 1e20])
    return [rng.randrange(3), "x"]


@pytest.fixture
def env(tmp_path):
    env = lmdb.open(str(tmp_path / "env"), max_dbs=5, map_size=1 << 28)
    yield env
    env.close()


def _entries(rng, n, directions):
    out = set()
    while len(out) < n:
        key = encode_key([_value(rng) for _ in directions], directions)
        rid = encode_key([rng.randrange(50)]) if rng.random() < 0.5 else rng.randrange(1, 99).to_bytes(8, "big")
        out.add((key, rid))
    return sorted(out)


def _bounds(rng, entries, directions):
    """Whole keys, their first components, cut-off prefixes, type brackets, None."""
    kind = rng.randrange(6)
    if kind == 0:
        return None
    key = rng.choice(entries)[0]
    if kind == 1:
        return key
    if kind == 2:
        return encode_key([_value(rng)], directions[:1])
    if kind == 3:
        return key[:rng.randrange(1, len(key) + 1)]
    if kind == 4:
        return rng.choice([type_bracket(T_NUMBER)[0], type_bracket(T_STRING)[1], b"\x00", b"\xff"])
    return encode_key([_value(rng) for _ in directions], directions)


@pytest.mark.parametrize("directions", [[1, 1], [-1, 1, -1], [1]])
@pytest.mark.parametrize("split_at_least", [1, 12, 32])
@pytest.mark.parametrize("seed", range(3))
def test_split_layout_scans_like_the_plain_layout(env, directions, split_at_least, seed, monkeypatch):
    monkeypatch.setattr(indexes, "SPLIT_AT_LEAST", split_at_least)  # split points of every kind
    rng = random.Random(seed)
    plain = env.open_db(b"plain")
    split = env.open_db(b"split", dupsort=True)
    entries = _entries(rng, 300, directions)
    side = env.open_db(b"_longkeys")
    with env.begin(write=True) as txn:
        lp, ls = LongKeys(side, "x1", 511), LongKeys(side, "x2", 511)
        indexes.bulk_add(txn, plain, lp, "db.c", "i", iter(entries), False)
        indexes.bulk_add(txn, split, ls, "db.c", "i", iter(entries), False)
        assert indexes.is_split(txn, split) and not indexes.is_split(txn, plain)
        removed = rng.sample(entries, 60)
        for key, rid in removed:
            indexes.remove(txn, plain, lp, [key], rid, False)
            indexes.remove(txn, split, ls, [key], rid, False, split=True)
        for key, rid in removed[:20]:  # added back through the single-entry path
            indexes.add(txn, plain, lp, [key], rid, False)
            indexes.add(txn, split, ls, [key], rid, False, split=True)
        assert txn.stat(split)["entries"] == txn.stat(plain)["entries"]
        for _ in range(400):
            lo, hi = _bounds(rng, entries, directions), _bounds(rng, entries, directions)
            kw = {"lo_inclusive": rng.random() < 0.5, "hi_inclusive": rng.random() < 0.5,
                  "reverse": rng.random() < 0.5}
            expected = list(indexes.scan(txn, plain, lp, False, lo, hi, **kw))
            assert list(indexes.scan(txn, split, ls, False, lo, hi, **kw)) == expected, (lo, hi, kw)
            if expected:
                after = rng.choice(expected)
                resumed = list(indexes.scan(txn, plain, lp, False, lo, hi, start_after=after, **kw))
                assert list(indexes.scan(txn, split, ls, False, lo, hi, start_after=after, **kw)) == resumed


def test_split_layout_keeps_one_copy_of_a_long_first_component(env):
    plain = env.open_db(b"plain")
    split = env.open_db(b"split", dupsort=True)
    meta = {f"tag{i}": f"value-{i}" * 3 for i in range(10)}
    entries = [(encode_key([meta, t, t + 1]), encode_key([t])) for t in range(500)]
    side = env.open_db(b"_longkeys")
    with env.begin(write=True) as txn:
        indexes.bulk_add(txn, plain, LongKeys(side, "x1", 511), "db.c", "i", iter(entries), False)
        indexes.bulk_add(txn, split, LongKeys(side, "x2", 511), "db.c", "i", iter(entries), False)
        pages = {name: sum(txn.stat(db)[k] for k in ("branch_pages", "leaf_pages", "overflow_pages"))
                 for name, db in (("plain", plain), ("split", split))}
    assert pages["split"] * 4 < pages["plain"]


def test_component_boundaries_match_the_encoding_of_every_type():
    import datetime

    from bson import Binary, Code, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp

    from tidemark.storage.keyspan import first_component_length, leading_components_length

    values = [None, 0, 1, -1, 2.5, -2.5, 1e300, -1e-300, float("inf"), float("-inf"), float("nan"), Int64(5),
              Decimal128("-1.5"), "", "a", "a\x00b", {}, {"a": 1, "b": "x\x00"}, [], [1, [2, {"c": None}]],
              b"bin", Binary(b"x", 5), ObjectId(), True, False, datetime.datetime(2020, 1, 1), Timestamp(1, 2),
              Regex("a.*", "i"), Code("f()"), Code("g()", {"x": 1}), MinKey(), MaxKey(), -123456789012345, 10**20]
    for value in values:
        for direction in (1, -1):
            one = encode_key([value], [direction])
            for rest in ([], [5], ["zz", None]):
                key = encode_key([value, *rest], [direction] + [1] * len(rest))
                assert first_component_length(key) == len(one), (value, direction, rest)
                assert leading_components_length(key, len(one) + 1) == (
                    len(one) + len(encode_key(rest[:1])) if rest else len(one))
    assert first_component_length(b"x") is None  # not an encoded key
    assert first_component_length(b"\x1eabc") is None  # cut short
