"""The catalog: databases, collections (options, UUID, ident), and index definitions.

Schema: the ``_catalog`` sub-database maps ``ns`` (UTF-8) to one BSON document

    {ns, uuid: UUID, options: {...}, clustered: bool, ident: "c<N>", kf: int,
     indexes: [{spec: {v, key, name, ...}, ident: "x<N>", kf: int}, ...]}

``kf``: the ``keys.KEY_FORMAT`` the stored keys were encoded with — an index's entries, and (``kf`` of
the collection) a clustered collection's record ids. Absent: 1 (written before formats were recorded).

Invariants:
- A database exists exactly when it holds at least one collection (as in mongod).
- No collection is created in a database whose name has a ``$``, nor a ``local.oplog.*`` one that is not
  capped (``check_creatable``).
- Idents are allocated from a counter in ``_meta`` and never reused, so a sub-database name
  ("r:<ident>" for records, "i:<ident>" for an index) always belongs to one collection/index
  incarnation; rename only rewrites the catalog key, never moves data.
- ``system.views`` and ``system.buckets.*`` are ordinary collections here; meaning lives above.
- ``CollectionInfo.raw`` is the exact catalog value it was decoded from; writers compare it to
  detect that an ``info`` is stale (index added/dropped, collection renamed or dropped).
"""

from __future__ import annotations

import uuid as uuid_module
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import bson
from bson.binary import UuidRepresentation
from bson.codec_options import CodecOptions, DatetimeConversion

from tidemark.storage.errors import InvalidNamespace, NonCappedOplog

# Same decisions as tidemark.protocol.codec (storage may not import protocol): dicts, naive UTC dates,
# standard UUIDs, Int64 kept.
CATALOG_CODEC: CodecOptions[dict[str, Any]] = CodecOptions(
    document_class=dict,
    tz_aware=False,
    uuid_representation=UuidRepresentation.STANDARD,
    datetime_conversion=DatetimeConversion.DATETIME_AUTO,
)

ID_INDEX_NAME = "_id_"


def split_ns(ns: str) -> tuple[str, str]:
    """``"db.coll.x"`` -> ``("db", "coll.x")``. Raises ValueError without a dot."""
    db, dot, name = ns.partition(".")
    if not dot or not db or not name:
        raise InvalidNamespace(f"Invalid namespace specified '{ns}': expected '<db>.<collection>'")
    return db, name


def check_creatable(ns: str, options: dict[str, Any] | None = None) -> None:
    """A collection is never created in a database whose name has a ``$`` (mongod's userAllowedCreateNS:
    a command may name ``$external``, nothing is stored there). 73 "Invalid namespace: <ns>". With the
    creation's ``options`` (None: only the name is checked), a ``local.oplog.*`` collection must be
    capped: 28838 (mongod's check at every creation, explicit or implicit)."""
    db, _ = split_ns(ns)
    if "$" in db:
        raise InvalidNamespace(f"Invalid namespace: {ns}")
    if options is not None and ns.startswith("local.oplog.") and not options.get("capped"):
        raise NonCappedOplog()


def records_db_name(ident: str) -> bytes:
    return b"r:" + ident.encode()


def index_db_name(ident: str) -> bytes:
    return b"i:" + ident.encode()


@dataclass(frozen=True)
class CollectionInfo:
    """One collection as the catalog knows it. Treat every field as read-only."""

    ns: str
    db: str
    name: str
    uuid: uuid_module.UUID
    options: dict[str, Any]
    clustered: bool
    indexes: tuple[dict[str, Any], ...]  # index spec dicts in creation order, "_id_" first unless clustered
    ident: str
    index_idents: dict[str, str] = field(default_factory=dict, repr=False)  # index name -> ident
    # index name -> the key format of its entries; key_format: of a clustered collection's record ids
    index_formats: dict[str, int] = field(default_factory=dict, repr=False)
    key_format: int = 1
    raw: bytes = field(default=b"", repr=False, compare=False)

    # Holds dicts: unhashable, spelled as the data model says. mypy reads it as an incompatible
    # override of object.__hash__ (python/mypy#4266, open): the one place its model is wrong here.
    __hash__ = None  # type: ignore[assignment]

    # What reads derive from the entry alone, worked out once per catalog version (an info is shared by
    # every reader of its catalog bytes: decode_entry) and then a plain attribute (cached_property sets
    # the instance's own value, which later reads find before the descriptor)
    @cached_property
    def records_db(self) -> bytes:
        """The records sub-database's name (``records_db_name(ident)``)."""
        return records_db_name(self.ident)

    @cached_property
    def index_dbs(self) -> dict[str, tuple[bytes, str, bool]]:
        """Index name -> (its sub-database's name, its ident, whether it is unique): what a read of the
        index looks up (a read view's index_reader took four calls for them, every read)."""
        return {name: (index_db_name(ident), ident, self.is_unique(name)) for name, ident in self.index_idents.items()}

    def index_spec(self, name: str) -> dict[str, Any] | None:
        for spec in self.indexes:
            if spec.get("name") == name:
                return spec
        return None

    def is_unique(self, name: str) -> bool:
        """The _id index is always unique (listIndexes does not show ``unique`` for it)."""
        if name == ID_INDEX_NAME and not self.clustered:
            return True
        spec = self.index_spec(name)
        return bool(spec and spec.get("unique"))

    def index_directions(self, name: str) -> list[int]:
        """Per-component directions of an index key (``-1`` descending, ``1`` otherwise)."""
        spec = self.index_spec(name) or {}
        return [-1 if isinstance(d, (int, float)) and d < 0 else 1 for d in spec.get("key", {}).values()]


def encode_entry(info_fields: dict[str, Any]) -> bytes:
    return bson.encode(info_fields, codec_options=CATALOG_CODEC)


_DECODED: dict[bytes, CollectionInfo] = {}
_DECODED_MAX = 4096


def decode_entry(raw: bytes) -> CollectionInfo:
    """Decode a catalog value. Cached by its bytes: every caller of the same catalog version
    shares one CollectionInfo, which is why its fields must be treated as read-only."""
    raw = bytes(raw)
    info = _DECODED.get(raw)
    if info is None:
        if len(_DECODED) >= _DECODED_MAX:
            _DECODED.clear()
        info = _DECODED[raw] = _decode_entry(raw)
    return info


def _decode_entry(raw: bytes) -> CollectionInfo:
    doc = bson.decode(raw, codec_options=CATALOG_CODEC)
    db, name = split_ns(doc["ns"])
    indexes = doc.get("indexes", [])
    return CollectionInfo(
        ns=doc["ns"],
        db=db,
        name=name,
        uuid=doc["uuid"],
        options=doc.get("options", {}),
        clustered=bool(doc.get("clustered", False)),
        indexes=tuple(entry["spec"] for entry in indexes),
        ident=doc["ident"],
        index_idents={entry["spec"]["name"]: entry["ident"] for entry in indexes},
        index_formats={entry["spec"]["name"]: entry.get("kf", 1) for entry in indexes},
        key_format=doc.get("kf", 1),
        raw=raw,
    )


def entry_fields(info: CollectionInfo) -> dict[str, Any]:
    """The catalog document of ``info`` (inverse of decode_entry), ready to modify and re-encode."""
    return {
        "ns": info.ns,
        "uuid": info.uuid,
        "options": info.options,
        "clustered": info.clustered,
        "ident": info.ident,
        "kf": info.key_format,
        "indexes": [{"spec": spec, "ident": info.index_idents[spec["name"]], "kf": info.index_formats[spec["name"]]}
                    for spec in info.indexes],
    }
