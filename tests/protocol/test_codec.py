"""protocol/codec.py: ``EncodedDocument`` is exactly a ``RawBSONDocument(data, RAW_CODEC_OPTIONS)`` (it sets
that class's private slots itself, to skip re-parsing bytes the server encoded): the same bytes when
encoded in a batch, the same mapping when read, the same class for every ``isinstance`` check."""

from __future__ import annotations

import datetime as dt

import bson
from bson.raw_bson import RawBSONDocument

from tidemark.protocol.codec import CODEC_OPTIONS, RAW_CODEC_OPTIONS, EncodedDocument, encode, encode_in_order


def test_an_encoded_document_is_a_raw_bson_document_of_its_bytes():
    data = encode_in_order({"t": dt.datetime(2024, 1, 1), "m": {"h": "a", "n": [1, {"x": None}]}, "_id": 3,
                            "v": bson.Int64(5), "d": dt.datetime(1900, 1, 1)})
    made, reference = EncodedDocument(data), RawBSONDocument(data, RAW_CODEC_OPTIONS)
    assert isinstance(made, RawBSONDocument)
    assert made.raw == reference.raw == data
    assert list(made) == list(reference) == ["t", "m", "_id", "v", "d"]  # _id stays where it was
    assert made == reference and dict(made.items()) == dict(reference.items())
    assert made["m"] == reference["m"] and made["m"].raw == reference["m"].raw
    assert made["v"] == 5 and type(made["v"]) is bson.Int64
    batch = {"cursor": {"firstBatch": [made, made]}}
    assert encode(batch) == encode({"cursor": {"firstBatch": [reference, reference]}})
    assert bson.decode(encode(batch), codec_options=CODEC_OPTIONS)["cursor"]["firstBatch"][0] == \
        bson.decode(data, codec_options=CODEC_OPTIONS)


def test_the_server_encodes_with_the_projects_codec_only():
    """protocol/codec.py is the one place that configures pymongo's bson: an encode with pymongo's default
    options refuses ``uuid.UUID`` (what subtype 4 decodes to) and answered 1 InternalError wherever a UUID
    reached it (hashed keys, time-series group tokens, $indexStats). An encode names the project's codec
    options or goes through ``codec.encode``."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    bare = re.compile(r"\bbson\.(encode|decode)\((?![^)]*codec_options)|from bson import[^\n]*\b(encode|decode)\b")
    offenders = [f"{path.relative_to(root)}:{n}" for folder in ("server", "storage", "protocol")
                 for path in sorted((root / folder).rglob("*.py"))
                 for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if bare.search(line)]
    assert offenders == []
