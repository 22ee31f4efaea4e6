"""Data sets and snapshots shared by the compaction tests (and their crash subprocess)."""

import random

import bson

from tidemark.storage.keys import encode_key

REGULAR = "db.reg"
CLUSTERED = "db.clu"
DROPPED = "db.gone"
K_INDEX = {"v": 2, "key": {"k": 1}, "name": "k_1"}
KT_INDEX = {"v": 2, "key": {"k": 1, "t": -1}, "name": "k_1_t_-1"}
MT_INDEX = {"v": 2, "key": {"m": 1, "t": 1}, "name": "m_1_t_1"}  # long first component: split layout


def _meta(k) -> dict:
    # a quarter of the metas make keys longer than LMDB holds (storage/longkeys.py), some sharing their head
    return {"host": f"host-{k % 5}", "region": "somewhere-far-away-1" * (30 if k % 4 == 0 else 1), "rack": str(k % 3)}


def _doc(rng: random.Random, _id, size: int) -> dict:
    # random bytes do not compress: the stored value stays about `size` bytes
    return {"_id": _id, "k": rng.randrange(20), "t": rng.randrange(1000), "pad": rng.randbytes(size)}


def regular_keys(doc) -> dict:
    return {"_id_": [encode_key([doc["_id"]])], "k_1": [encode_key([doc["k"]])]}


def clustered_keys(doc) -> dict:
    return {"k_1_t_-1": [encode_key([doc["k"], doc["t"]], [1, -1])],
            "m_1_t_1": [encode_key([_meta(doc["k"]), doc["t"]])]}


def populate(engine, n: int = 300, seed: int = 7) -> None:
    """A regular collection (secondary index; values from 50 B to 20 KB, inline and overflow), a
    clustered one (rid = encoded _id, compound index), journal streams, a dropped collection and
    compressible records; several groups, with updates and deletes, so free pages exist too."""
    rng = random.Random(seed)
    sizes = [50, 300, 1500, 1990, 2100, 2500, 3000, 5000, 9000, 20000]

    def setup(w):
        reg = w.create_collection(REGULAR, {})
        w.create_index(reg, K_INDEX, [])
        clu = w.create_collection(CLUSTERED, {"clusteredIndex": True}, clustered=True)
        clu = w.create_index(clu, KT_INDEX, [])
        w.create_index(clu, MT_INDEX, [])
        gone = w.create_collection(DROPPED, {})
        w.insert(gone, bson.encode({"_id": 1, "pad": b"x" * 5000}), {"_id_": [encode_key([1])]})

    engine.write_sync(setup)
    for start in range(0, n, 50):
        docs = [_doc(rng, i, rng.choice(sizes)) for i in range(start, min(n, start + 50))]
        compressible = [{"_id": f"z{i}", "k": i % 7, "text": "abc" * rng.randrange(10, 2000)}
                        for i in range(start, min(n, start + 50))]

        def batch(w, docs=docs, compressible=compressible):
            reg = w.get_collection(REGULAR)
            clu = w.get_collection(CLUSTERED)
            for doc in docs:
                w.insert(reg, bson.encode(doc), regular_keys(doc))
                w.insert(clu, bson.encode(doc), clustered_keys(doc), rid=encode_key([doc["_id"]]))
            for doc in compressible:
                w.insert(reg, bson.encode(doc), {"_id_": [encode_key([doc["_id"]])],
                                                  "k_1": [encode_key([doc["k"]])]})
            w.journal_append(b"stream-%d" % (docs[0]["_id"] % 3), bson.encode({"ids": [d["_id"] for d in docs]}))

        engine.write_sync(batch)

    def churn(w):
        clu = w.get_collection(CLUSTERED)
        for _id in range(0, n, 7):  # rewrite some values (COW: free pages), delete others
            rid = encode_key([_id])
            old = bson.decode(w.get(clu, rid))
            if _id % 2:
                w.delete(clu, rid, clustered_keys(old))
            else:
                new = _doc(rng, _id, rng.choice(sizes))
                w.update(clu, rid, bson.encode(new), clustered_keys(old), clustered_keys(new))
        w.journal_trim(b"stream-0", 2)
        w.drop_collection(DROPPED)

    engine.write_sync(churn)


def snapshot(engine) -> dict:
    """Everything a reader can observe, per collection, plus the journal."""
    out = {}
    with engine.read() as r:
        out["databases"] = r.list_databases()
        for db in out["databases"]:
            for info in r.list_collections(db):
                out[info.ns] = {
                    "records": list(r.scan(info)),
                    "reverse": list(r.scan(info, reverse=True)),
                    "gets": [r.get(info, rid) for rid, _ in r.scan(info)],
                    "bounded": list(r.scan(info, lo=encode_key([50]), hi=encode_key([150]), reverse=True)),
                    "indexes": {name: list(r.index_scan(info, name)) for name in info.index_idents},
                    "count": r.count(info),
                    "data_size": r.data_size(info),
                    "uuid": info.uuid,
                }
        out["journal"] = list(r.journal_scan())
    return out
