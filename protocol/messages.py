"""Requests and replies: OP_MSG (2013), the legacy OP_QUERY/OP_REPLY handshake pair, and the entry
point :func:`decode_message` that turns one complete frame into a frozen request object.

Contract: parsing validates everything a command handler must be able to rely on (flags, sections,
checksum, BSON); the resulting ``command`` is a plain dict with kind-1 document sequences folded
in as lists. One exception, for the ingest hot path: the ``documents`` sequence of an ``insert`` is
folded in as a :class:`RawDocuments` (framing checked, BSON not yet decoded), so a handler that can
read documents straight from their bytes never builds a dict per document; ``RawDocuments.decode()``
gives the list (and the same InvalidBSON error the eager parse gives). Replies are always built as a
single kind-0 section with flags 0 and no checksum, because drivers reject anything else.
"""

from __future__ import annotations

import array
import struct
from typing import Any, NamedTuple, NoReturn

import crc32c
import numpy as np

from tidemark.protocol import codec, compression, sliced_decode
from tidemark.protocol.errors import ErrorCode
from tidemark.protocol.framing import (
    HEADER,
    HEADER_SIZE,
    INT32,
    MAX_BSON_DEPTH,
    MAX_COMMAND_SIZE,
    UINT32,
    MsgHeader,
    OpCode,
    ParseError,
    parse_header,
    read_cstring,
)

CHECKSUM_PRESENT = 1 << 0
MORE_TO_COME = 1 << 1
EXHAUST_ALLOWED = 1 << 16
_KNOWN_REQUIRED_FLAGS = CHECKSUM_PRESENT | MORE_TO_COME
_REQUIRED_FLAGS_MASK = 0xFFFF
MAX_DOCUMENT_SEQUENCES = 2

_OP_REPLY_PREFIX = struct.Struct("<iqii")  # responseFlags, cursorID, startingFrom, numberReturned
_OP_QUERY_COUNTS = struct.Struct("<ii")  # numberToSkip, numberToReturn
QUERY_FAILURE = 1 << 1


class OpMsg(NamedTuple):
    """A parsed OP_MSG request. ``command`` already holds the document sequences, keyed by identifier.
    Requests are named tuples: immutable like a frozen dataclass, and built without one
    ``object.__setattr__`` per field (every command pays for its request's construction)."""

    request_id: int
    flags: int
    command: dict[str, Any]
    sequence_ids: tuple[str, ...] = ()
    compressor_id: int | None = None
    # Every element of the body in wire order, (name, value) — set only when a field name repeats, which
    # a dict cannot hold: ``command`` then keeps each name's first value (what mongod's lookups read).
    repeated: tuple[tuple[str, Any], ...] | None = None

    @property
    def more_to_come(self) -> bool:
        return bool(self.flags & MORE_TO_COME)

    @property
    def exhaust_allowed(self) -> bool:
        return bool(self.flags & EXHAUST_ALLOWED)


class OpQuery(NamedTuple):
    """A parsed legacy OP_QUERY (only ``<db>.$cmd`` handshakes are served)."""

    request_id: int
    flags: int
    full_collection_name: str
    number_to_skip: int
    number_to_return: int
    query: dict[str, Any]
    fields: dict[str, Any] | None = None
    compressor_id: int | None = None
    repeated: tuple[tuple[str, Any], ...] | None = None  # as ``OpMsg.repeated``, for the query document

    @property
    def database(self) -> str:
        return self.full_collection_name.split(".", 1)[0]

    @property
    def collection(self) -> str:
        parts = self.full_collection_name.split(".", 1)
        return parts[1] if len(parts) > 1 else ""


class OpGetMore(NamedTuple):
    """A legacy OP_GET_MORE: mongod (>= 5.1) answers it with an OP_REPLY error (5739101) and keeps the
    connection, without reading its body."""

    request_id: int
    compressor_id: int | None = None


Request = OpMsg | OpQuery | OpGetMore
# A request built from its fields' tuple in one C call (a named tuple's ``__new__`` is a Python
# function around this, and every command pays for its request's construction).
_new_request = tuple.__new__


_NO_OFFSETS = np.zeros(0, np.int64)
_NO_OFFSETS.flags.writeable = False


class RawDocuments:
    """A kind-1 document sequence kept as bytes: ``buffer[offsets[i]:ends[i]]`` is document ``i``
    (``offsets``: int64 array, read-only).

    Framing is checked when it is built (each length prefix is >= 5, fits in the sequence and its
    document ends with a NUL byte); the BSON inside is checked by ``decode()`` or by whoever parses
    the bytes itself. Immutable once built."""

    __slots__ = ("buffer", "start", "end", "offsets", "identifier", "_decoded")

    def __init__(self, buffer: bytes, start: int, end: int, identifier: str, request_id: int = 0):
        # one pass over the length prefixes (into an int64 array: its consumers take it as is, no list
        # conversion), then every document's NUL checked at once: the first document that breaks a rule
        # is reported, as a document-by-document check would
        found = array.array("q")
        append = found.append
        unpack = INT32.unpack_from
        pos, size = start, 5
        try:
            while pos < end:
                append(pos)
                (size,) = unpack(buffer, pos)
                if size < 5:
                    break
                pos += size
        except struct.error:  # fewer than 4 bytes left in the buffer: the trailing-bytes case below
            pass
        offsets = np.frombuffer(found, np.int64) if found else _NO_OFFSETS
        offsets.flags.writeable = False
        if len(offsets):
            whole = np.frombuffer(buffer, np.uint8)
            last = int(offsets[-1])
            # every document but the last one has a sane length: check their NULs first
            unterminated = np.flatnonzero(whole[offsets[1:] - 1] != 0)
            if len(unterminated):
                _bad_document(buffer, start, int(offsets[int(unterminated[0])]), identifier, request_id)
            if end - last < 5:
                raise ParseError(ErrorCode.InvalidBSON, f"Invalid BSON in document sequence '{identifier}': "
                                 f"{end - last} trailing bytes are not a document", request_id=request_id)
            if size < 5 or pos != end or whole[end - 1] != 0:
                _bad_document(buffer, start, last, identifier, request_id)
            if end - start > MAX_COMMAND_SIZE:  # (only then can one of its documents be too large)
                sizes = np.diff(offsets, append=end)
                oversized = np.flatnonzero(sizes > MAX_COMMAND_SIZE)
                if len(oversized):
                    first = int(offsets[int(oversized[0])])
                    # mongod reads the documents in order, each validated before its size is checked
                    try:
                        sliced_decode.decode_all(memoryview(buffer)[start:first + int(sizes[int(oversized[0])])])
                    except Exception as exc:  # noqa: BLE001 - bytes the client sent: whatever the decoder raises is 22
                        raise ParseError(ErrorCode.InvalidBSON, f"Invalid BSON in document sequence "
                                         f"'{identifier}': {exc}", request_id=request_id) from None
                    raise _too_large(buffer, first, request_id)
        self.buffer = buffer
        self.start = start
        self.end = end
        self.offsets = offsets
        self.identifier = identifier
        self._decoded: list[dict[str, Any]] | None = None

    def __len__(self) -> int:
        return len(self.offsets)

    def __repr__(self) -> str:
        return f"RawDocuments({len(self.offsets)} documents, {self.end - self.start} bytes)"

    def decode(self) -> list[dict[str, Any]]:
        """The documents as dicts (decoded once). Raises ``ParseError`` InvalidBSON (22) as the eager
        parse would."""
        if self._decoded is None:
            try:
                self._decoded = sliced_decode.decode_all(memoryview(self.buffer)[self.start:self.end])
            except Exception as exc:  # noqa: BLE001 - bytes the client sent: whatever the decoder raises is 22
                raise ParseError(ErrorCode.InvalidBSON,
                                 f"Invalid BSON in document sequence '{self.identifier}': {exc}") from None
        return self._decoded


def _bad_document(buffer: bytes, start: int, pos: int, identifier: str, request_id: int) -> NoReturn:
    (size,) = INT32.unpack_from(buffer, pos)
    raise ParseError(ErrorCode.InvalidBSON, f"Invalid BSON in document sequence '{identifier}': "
                     f"bad document length {size} at offset {pos - start}", request_id=request_id)


def materialize(value: Any) -> Any:
    """``value`` with a :class:`RawDocuments` decoded into its list of dicts (anything else as is)."""
    return value.decode() if type(value) is RawDocuments else value


def _decode_document(
    view: memoryview, pos: int, end: int, what: str, request_id: int
) -> tuple[dict[str, Any], int]:
    if end - pos < 5:
        raise ParseError(ErrorCode.ProtocolError, f"Truncated {what}", request_id=request_id)
    (size,) = INT32.unpack_from(view, pos)
    if size < 5 or pos + size > end:
        raise ParseError(
            ErrorCode.InvalidBSON,
            f"Invalid BSON in {what}: document length {size} overruns the {end - pos} bytes left",
            request_id=request_id,
        )
    try:
        if size <= sliced_decode.SLICE_BYTES:  # (one C call: a small document never stalls the loop)
            return codec.decode(view[pos : pos + size]), pos + size
        document = sliced_decode.decode(view[pos : pos + size])
    except Exception as exc:  # noqa: BLE001 - bytes the client sent: whatever the decoder raises is 22
        raise ParseError(
            ErrorCode.InvalidBSON, f"Invalid BSON in {what}: {exc}", request_id=request_id
        ) from None
    if size > MAX_COMMAND_SIZE:  # (valid BSON, then too large: mongod's order)
        raise _too_large(view, pos, request_id)
    return document, pos + size


def _too_large(data: bytes | memoryview, pos: int, request_id: int) -> ParseError:
    """10334 for the (valid) document at ``pos`` of ``data``, longer than BSONObjMaxInternalSize: the
    error mongod's ``BSONObj::_assertInvalid`` raises when OpMsg::parse loads a section's document.
    The request fails as a whole; the connection stays open."""
    (size,) = INT32.unpack_from(data, pos)
    element = _element_text(data, pos + 4)
    return ParseError(
        ErrorCode.BSONObjectTooLarge,
        f"BSONObj size: {size} (0x{size:X}) is invalid. Size must be between 0 and {MAX_COMMAND_SIZE}"
        f"({MAX_COMMAND_SIZE // (1024 * 1024)}MB)" + (f" First element: {element}" if element else ""),
        request_id=request_id,
    )


_DOUBLE = struct.Struct("<d")
_INT64 = struct.Struct("<q")


def _element_text(data: bytes | memoryview, pos: int) -> str | None:
    """The element at ``pos`` of ``data`` as mongod's
    ``BSONElement::toString`` shows it (``insert: "c"``, ``_id: ObjectId('...')``), for the scalar
    types a command or document starts with; None for the others (the message then ends earlier)."""
    head = bytes(data[pos : pos + 1024])  # (a longer field name is not shown)
    kind = head[0]
    name_end = head.find(b"\x00", 1)
    if name_end < 0:
        return None
    name = head[1:name_end].decode("utf-8", "replace")
    value = pos + name_end + 1
    if kind == 0x02:  # string: longer than 159 bytes shows its first 150 and "..."
        (length,) = INT32.unpack_from(data, value)
        if length > 160:
            return f'{name}: "{bytes(data[value + 4 : value + 154]).decode("utf-8", "replace")}..."'
        return f'{name}: "{bytes(data[value + 4 : value + 3 + length]).decode("utf-8", "replace")}"'
    if kind == 0x10:
        return f"{name}: {INT32.unpack_from(data, value)[0]}"
    if kind == 0x12:
        return f"{name}: {_INT64.unpack_from(data, value)[0]}"
    if kind == 0x01:  # StringBuilder::appendDoubleNice: %.16g, ".0" after an integral value
        text = f"{_DOUBLE.unpack_from(data, value)[0]:.16g}"
        return f"{name}: {text if any(c in text for c in '.en') else text + '.0'}"
    if kind == 0x07:
        return f"{name}: ObjectId('{bytes(data[value : value + 12]).hex()}')"
    if kind == 0x08:
        return f"{name}: {'true' if data[value] else 'false'}"
    if kind == 0x0A:
        return f"{name}: null"
    return None


# How to step over a BSON element's value, by type byte: a fixed size (>= 0), or -(extra + 1) for a value
# led by an int32 length that leaves ``extra`` bytes uncounted; None for a regex (two cstrings). No
# other type byte passes the decoder.
_VALUE_SKIP: list[int | None] = [None] * 256
for _type, _size in {0x01: 8, 0x06: 0, 0x07: 12, 0x08: 1, 0x09: 8, 0x0A: 0, 0x10: 4, 0x11: 8, 0x12: 8,
                     0x13: 16, 0xFF: 0, 0x7F: 0}.items():
    _VALUE_SKIP[_type] = _size
for _type, _extra in {0x02: 4, 0x0D: 4, 0x0E: 4, 0x03: 0, 0x04: 0, 0x0F: 0, 0x05: 5, 0x0C: 16}.items():
    _VALUE_SKIP[_type] = -(_extra + 1)


def _element_starts(data: bytes, start: int, size: int, skips: list[int | None] = _VALUE_SKIP) -> list[int]:
    """The offsets of the top-level elements of the document at ``start`` (``size`` bytes) of ``data``,
    which the decoder has already validated (read only for a body whose names repeat)."""
    starts: list[int] = []
    pos, end = start + 4, start + size - 1
    while pos < end:
        starts.append(pos)
        pos = _element_end(data, pos, skips)
    return starts


def _element_end(data: bytes, pos: int, skips: list[int | None] = _VALUE_SKIP) -> int:
    """The offset after the (validated) element at ``pos``: its type, name and length read, never its value."""
    skip = skips[data[pos]]
    pos = data.find(b"\x00", pos + 1) + 1
    if skip is None:  # a regex: pattern and options
        return data.find(b"\x00", data.find(b"\x00", pos) + 1) + 1
    if skip >= 0:
        return pos + skip
    length: int = INT32.unpack_from(data, pos)[0]
    return pos + length - skip - 1


def _repeated_fields(
    data: bytes, start: int, size: int, document: dict[str, Any], skips: list[int | None] = _VALUE_SKIP
) -> tuple[dict[str, Any], tuple[tuple[str, Any], ...] | None]:
    """``document`` (decoded from ``data[start:start + size]``) and None when no field name repeats;
    otherwise the document rebuilt with each name's first value, and every element in wire order.
    Commands never repeat a name, so the check counts the element heads (every OP_MSG body pays it: a
    few C calls per field, never growing with the values' size) and the rebuild happens only for a body
    that does."""
    find = data.find
    unpack = INT32.unpack_from
    pos, end = start + 4, start + size - 1
    count = 0
    while pos < end:  # (``_element_end`` inlined: this runs for every request)
        count += 1
        skip = skips[data[pos]]
        pos = find(b"\x00", pos + 1) + 1
        if skip is None:
            pos = find(b"\x00", find(b"\x00", pos) + 1) + 1
        elif skip >= 0:
            pos += skip
        else:
            pos += unpack(data, pos)[0] - skip - 1
    if count == len(document):
        return document, None
    bounds = [*_element_starts(data, start, size), start + size - 1]
    elements = []
    for begin, stop in zip(bounds, bounds[1:], strict=False):
        element = data[begin:stop]
        elements.append(next(iter(codec.decode(INT32.pack(len(element) + 5) + element + b"\x00").items())))
    first: dict[str, Any] = {}
    for name, value in elements:
        first.setdefault(name, value)
    return first, tuple(elements)


def _every_value(elements: tuple[tuple[str, Any], ...]) -> dict[str, Any]:
    """A document holding every value of ``elements``, repeats included (for the depth check, which
    mongod applies to every element of the body)."""
    return {str(index): value for index, (_, value) in enumerate(elements)}


# Each level below the top costs at least 7 bytes (type byte, a 1-byte name's NUL, a 5-byte empty
# document or array), so a document shorter than this cannot nest past MAX_BSON_DEPTH: no walk needed.
_DEPTH_WALK_BYTES = 5 + 7 * MAX_BSON_DEPTH


def _check_depth(document: dict[str, Any], request_id: int, size: int | None = None) -> None:
    """15 Overflow when ``document`` nests deeper than MAX_BSON_DEPTH (``size``: its BSON length,
    when known: a short document is not walked)."""
    if size is not None and size < _DEPTH_WALK_BYTES:
        return
    if codec.nesting_exceeds(document, MAX_BSON_DEPTH):
        raise ParseError(ErrorCode.Overflow, "BSONObj exceeds maximum nested object depth", request_id=request_id)


def parse_op_msg(message: bytes, header: MsgHeader) -> OpMsg:
    rid = header.request_id
    end = len(message)
    if end < HEADER_SIZE + 5:
        raise ParseError(
            ErrorCode.ProtocolError, "OP_MSG is too short to hold flags and a section", request_id=rid
        )
    (flags,) = UINT32.unpack_from(message, HEADER_SIZE)
    illegal = flags & _REQUIRED_FLAGS_MASK & ~_KNOWN_REQUIRED_FLAGS
    if illegal:
        raise ParseError(
            ErrorCode.IllegalOpMsgFlag, f"Message contains illegal flags value: Ob{flags:032b}", fatal=True
        )
    if flags & CHECKSUM_PRESENT:  # (verified once the sections parsed: mongod's order)
        end -= 4
        if end < HEADER_SIZE + 5:
            raise ParseError(51252, "Invalid message size for an OpMsg containing a checksum", request_id=rid)
    # each document sequence as it is read (``end``: where the checksum, if any, begins)
    sequences: list[tuple[str, RawDocuments]] = []
    try:
        view = memoryview(message)
        body: dict[str, Any] | None = None
        repeated: tuple[tuple[str, Any], ...] | None = None
        pos = HEADER_SIZE + 4
        while pos < end:
            kind = message[pos]
            pos += 1
            if kind == 0:
                if body is not None:
                    raise ParseError(40430, "Multiple body sections in message", request_id=rid)
                body_start = pos
                body, pos = _decode_document(view, pos, end, "OP_MSG body section", rid)
                body_size = pos - body_start
                body, repeated = _repeated_fields(message, body_start, body_size, body)
                if body_size >= _DEPTH_WALK_BYTES:  # (a shorter body cannot nest too deeply)
                    # validated as it is read (Validated<BSONObj>), as the sequences' documents are: a body
                    # nested too deeply is 15 before any later section's error
                    _check_depth(body if repeated is None else _every_value(repeated), rid)
                if "$tenant" in body:  # (a server without multitenancy: 7.0's op_msg.cpp, at once)
                    raise ParseError(ErrorCode.InvalidOptions,
                                     "Multitenancy not enabled, cannot set $tenant in command body",
                                     request_id=rid)
            elif kind == 1:
                if len(sequences) >= MAX_DOCUMENT_SEQUENCES:  # (before the section is read, as mongod)
                    raise ParseError(
                        ErrorCode.TooManyDocumentSequences, "Too many document sequences in OP_MSG",
                        fatal=True
                    )
                if end - pos < 4:
                    raise ParseError(
                        ErrorCode.ProtocolError, "Truncated document sequence header", request_id=rid
                    )
                (size,) = INT32.unpack_from(message, pos)
                seq_end = pos + size
                if size < 5 or seq_end > end:
                    raise ParseError(
                        ErrorCode.ProtocolError,
                        f"Document sequence of {size} bytes overruns the {end - pos} bytes left in the "
                        "message",
                        request_id=rid,
                    )
                identifier, docs_start = read_cstring(
                    message, pos + 4, "document sequence identifier", rid, limit=seq_end
                )
                if any(identifier == seen for seen, _ in sequences):
                    raise ParseError(40431, f"Duplicate document sequence: {identifier}", request_id=rid)
                docs = RawDocuments(message, docs_start, seq_end, identifier, rid)
                sequences.append((identifier, docs))
                pos = seq_end
            elif kind == 2:  # a security token section: only a multitenant server takes one
                raise ParseError(ErrorCode.Unauthorized, "Unsupported Security Token provided",
                                 request_id=rid)
            else:
                raise ParseError(40432, f"Unknown section kind {kind}", request_id=rid)
        if body is None:
            raise ParseError(40587, "OP_MSG messages must have a body", request_id=rid)
        if not sequences:
            if flags & CHECKSUM_PRESENT and not _checksum_matches(message, end):
                raise _checksum_mismatch()
            return _new_request(OpMsg, (rid, flags, body, (), None, repeated))
        for identifier, _ in sequences:
            if _in_body(body, identifier):
                raise ParseError(
                    40433, f"Duplicate field between body and document sequence {identifier}", request_id=rid
                )
        lazy = next(iter(body), None) == "insert"  # an insert's documents may be read from their bytes
        for identifier, docs in sequences:
            if lazy and identifier == "documents":
                body[identifier] = docs
                continue
            body[identifier] = _sequence_documents(docs, rid)
        if flags & CHECKSUM_PRESENT and not _checksum_matches(message, end):
            raise _checksum_mismatch()  # (after the insert's documents are validated: the except below)
        return OpMsg(rid, flags, body, tuple([name for name, _ in sequences]), None, repeated)
    except ParseError:
        # mongod reads each sequence document as BSON it validates (Validated<BSONObj>) while it reads
        # the sections: an invalid document of a sequence read before the failure is the error met first
        # (e.g. 22, not a duplicate field 40433 or a checksum mismatch 288). Only a failing request pays.
        for _, docs in sequences:
            _sequence_documents(docs, rid)
        raise


def _sequence_documents(docs: RawDocuments, request_id: int) -> list[dict[str, Any]]:
    """The documents of a sequence, validated as mongod's OpMsg::parse reads each one
    (``Validated<BSONObj>``): 22 InvalidBSON, then 15 Overflow for one nested too deeply."""
    try:
        documents = docs.decode()
    except ParseError as exc:
        exc.request_id = request_id
        raise
    for doc in documents:
        _check_depth(doc, request_id)
    return documents


def _checksum_matches(message: bytes, end: int) -> bool:
    """Whether the CRC-32C at ``end`` covers ``message[:end]``."""
    (expected,) = UINT32.unpack_from(message, end)
    return bool(crc32c.crc32c(memoryview(message)[:end]) == expected)


def _checksum_mismatch() -> ParseError:
    """288 ChecksumMismatch: fatal, as mongod ends the connection."""
    return ParseError(ErrorCode.ChecksumMismatch, "OP_MSG checksum does not match contents", fatal=True)


def _in_body(body: dict[str, Any], identifier: str) -> bool:
    """Whether the body holds the sequence's identifier as mongod looks for it
    (``extractElementAtPathOrArrayAlongPath``): a dotted identifier is a path, found when every step
    exists and the walk ends or meets an array on the way."""
    if "." not in identifier:
        return identifier in body
    value: Any = body
    for step in identifier.split("."):
        if type(value) is not dict or step not in value:
            return False
        value = value[step]
        if type(value) is list:
            return True
    return True


def parse_op_query(message: bytes, header: MsgHeader) -> OpQuery:
    rid = header.request_id
    if len(message) < HEADER_SIZE + 4 + 1 + 8 + 5:
        raise ParseError(ErrorCode.ProtocolError, "OP_QUERY is too short", request_id=rid)
    (flags,) = INT32.unpack_from(message, HEADER_SIZE)
    name, pos = read_cstring(message, HEADER_SIZE + 4, "OP_QUERY fullCollectionName", rid)
    if len(message) - pos < 8:
        raise ParseError(ErrorCode.ProtocolError, "Truncated OP_QUERY", request_id=rid)
    skip, n_return = _OP_QUERY_COUNTS.unpack_from(message, pos)
    pos += 8
    view = memoryview(message)
    query_start = pos
    query, pos = _decode_document(view, pos, len(message), "OP_QUERY query", rid)
    query_size = pos - query_start
    fields = None
    if pos < len(message):
        fields, pos = _decode_document(view, pos, len(message), "OP_QUERY returnFieldsSelector", rid)
    if pos != len(message):
        raise ParseError(ErrorCode.ProtocolError, "Trailing bytes after OP_QUERY documents", request_id=rid)
    query, repeated = _repeated_fields(message, query_start, query_size, query)
    _check_depth(query if repeated is None else _every_value(repeated), rid, query_size)
    return OpQuery(rid, flags, name, skip, n_return, query, fields, None, repeated)


def decode_message(message: bytes | bytearray) -> Request:
    """Parse one complete frame (``message`` is exactly ``messageLength`` bytes, header included).

    Raises :class:`tidemark.protocol.framing.ParseError` for anything malformed; opcodes other than OP_MSG,
    OP_QUERY, OP_GET_MORE and OP_COMPRESSED (wrapping one of those) are fatal, as mongod ends the
    connection of an OP_INSERT, OP_UPDATE, OP_DELETE or OP_KILL_CURSORS.
    """
    header = parse_header(message)
    compressor_id = None
    if header.op_code == OpCode.OP_COMPRESSED:
        message, compressor_id = compression.decompress(message)
        header = parse_header(message)
    # A large frame arrives as the connection's own bytearray (taken over, not copied) and a
    # decompressed one as the buffer it was decompressed into: requests hold immutable bytes
    # (readers hash slices of an insert's documents).
    frame = message if type(message) is bytes else bytes(message)
    if header.op_code == OpCode.OP_MSG:
        request: Request = parse_op_msg(frame, header)
    elif header.op_code == OpCode.OP_QUERY:
        request = parse_op_query(frame, header)
    elif header.op_code == OpCode.OP_GET_MORE:
        request = OpGetMore(header.request_id)
    else:
        try:
            name = OpCode(header.op_code).name
        except ValueError:
            name = "unknown opcode"
        raise ParseError(ErrorCode.ProtocolError, f"Unsupported opcode {header.op_code} ({name})", fatal=True)
    if compressor_id is not None:
        request = request._replace(compressor_id=compressor_id)
    return request


# The flags and the kind-0 section byte of a reply without flags (every reply but an exhaust stream's)
_NO_FLAGS_BODY = UINT32.pack(0) + b"\x00"


def encode_op_msg(document: bytes, request_id: int, response_to: int, flags: int = 0) -> bytes:
    """A reply frame: header, ``flags``, one kind-0 section holding the BSON ``document``."""
    length = HEADER_SIZE + 4 + 1 + len(document)
    return b"".join((HEADER.pack(length, request_id, response_to, OpCode.OP_MSG),
                     UINT32.pack(flags) + b"\x00" if flags else _NO_FLAGS_BODY, document))


def encode_op_msg_request(
    command: dict[str, Any] | bytes,
    request_id: int,
    *,
    flags: int = 0,
    sequences: dict[str, list[dict[str, Any]]] | None = None,
    checksum: bool = False,
) -> bytes:
    """Build a client-side OP_MSG (tests and tools use it): optional kind-1 sequences and checksum.
    ``command`` may be BSON bytes already (a body a dict cannot hold, e.g. with a repeated name)."""
    parts = [b"\x00", command if isinstance(command, bytes) else codec.encode(command)]
    for identifier, docs in (sequences or {}).items():
        payload = identifier.encode() + b"\x00" + b"".join(codec.encode(d) for d in docs)
        parts += [b"\x01", INT32.pack(4 + len(payload)), payload]
    if checksum:
        flags |= CHECKSUM_PRESENT
    body = UINT32.pack(flags) + b"".join(parts)
    length = HEADER_SIZE + len(body) + (4 if checksum else 0)
    message = HEADER.pack(length, request_id, 0, OpCode.OP_MSG) + body
    if checksum:
        message += UINT32.pack(crc32c.crc32c(message))
    return message


def encode_op_query_request(
    full_collection_name: str, query: dict[str, Any] | bytes, request_id: int, *, number_to_return: int = -1
) -> bytes:
    """Build a client-side OP_QUERY (tests use it to replay the legacy handshake); ``query`` may be BSON
    bytes already."""
    body = (
        INT32.pack(0)
        + full_collection_name.encode()
        + b"\x00"
        + _OP_QUERY_COUNTS.pack(0, number_to_return)
        + (query if isinstance(query, bytes) else codec.encode(query))
    )
    return HEADER.pack(HEADER_SIZE + len(body), request_id, 0, OpCode.OP_QUERY) + body


def encode_op_reply(document: bytes, request_id: int, response_to: int, response_flags: int = 0) -> bytes:
    """The legacy answer to an OP_QUERY: exactly one document, cursor id 0."""
    length = HEADER_SIZE + _OP_REPLY_PREFIX.size + len(document)
    return b"".join(
        (
            HEADER.pack(length, request_id, response_to, OpCode.OP_REPLY),
            _OP_REPLY_PREFIX.pack(response_flags, 0, 0, 1),
            document,
        )
    )


def decode_reply(message: bytes | bytearray) -> dict[str, Any]:
    """Decode a server reply frame (OP_MSG or OP_REPLY, possibly compressed) to its document."""
    header = parse_header(message)
    if header.op_code == OpCode.OP_COMPRESSED:
        message, _ = compression.decompress(message)
        header = parse_header(message)
    if header.op_code == OpCode.OP_MSG:
        return codec.decode(memoryview(message)[HEADER_SIZE + 5 :])
    if header.op_code == OpCode.OP_REPLY:
        return codec.decode(memoryview(message)[HEADER_SIZE + _OP_REPLY_PREFIX.size :])
    raise ParseError(ErrorCode.ProtocolError, f"Not a reply opcode: {header.op_code}")
