"""Helpers shared by storage tests (what the server layer would compute)."""

import bson

from tidemark.storage.keys import encode_key


def id_keys(doc):
    """Index keys of the _id index for a document (what the server's planner would compute)."""
    return {"_id_": [encode_key([doc["_id"]])]}


def insert_docs(engine, ns, docs, create=True):
    """Insert docs (each with _id) into ns in one write; returns their rids."""

    def fn(w):
        info = w.get_collection(ns)
        if info is None and create:
            info = w.create_collection(ns, {})
        return [w.insert(info, bson.encode(d), id_keys(d)) for d in docs]

    return engine.write_sync(fn)
