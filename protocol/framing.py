"""Message framing: the 16-byte MsgHeader, opcodes, size limits and parse errors.

Pure and synchronous. Every integer on the wire is little-endian. A frame is ``messageLength`` bytes,
header included; :func:`frame_length` validates the length before anything else is read so that a
hostile length can never make the server buffer more than ``MAX_MESSAGE_SIZE`` bytes.
"""

from __future__ import annotations

import enum
import struct
from typing import NamedTuple

from tidemark.protocol.errors import ErrorCode, MongoError

HEADER = struct.Struct("<iiii")
HEADER_SIZE = HEADER.size  # 16
INT32 = struct.Struct("<i")
UINT32 = struct.Struct("<I")

MAX_MESSAGE_SIZE = 48_000_000
MAX_BSON_OBJECT_SIZE = 16 * 1024 * 1024
MAX_WRITE_BATCH_SIZE = 100_000
# Nesting limits (mongod's BSONDepth): a command or any document it carries, and a stored document.
MAX_BSON_DEPTH = 200
MAX_STORED_DEPTH = 180
# A command body may exceed maxBsonObjectSize by the driver's command overhead (pymongo: 16382).
MAX_COMMAND_SIZE = MAX_BSON_OBJECT_SIZE + 16 * 1024


class OpCode(enum.IntEnum):
    OP_REPLY = 1
    OP_UPDATE = 2001
    OP_INSERT = 2002
    OP_QUERY = 2004
    OP_GET_MORE = 2005
    OP_DELETE = 2006
    OP_KILL_CURSORS = 2007
    OP_COMPRESSED = 2012
    OP_MSG = 2013


class MsgHeader(NamedTuple):
    """The 16-byte header (a named tuple: immutable, and built by one C call per message)."""

    length: int
    request_id: int
    response_to: int
    op_code: int

    def pack(self) -> bytes:
        return HEADER.pack(self.length, self.request_id, self.response_to, self.op_code)


class ParseError(MongoError):
    """A request that cannot be understood.

    ``fatal`` errors leave the byte stream in an unknown state or are classed by MongoDB as
    ConnectionFatalMessageParseError: the server closes the connection after them. Non-fatal ones
    are answered with an ordinary error reply to ``request_id``.
    """

    def __init__(self, code: int, message: str, *, fatal: bool = False, request_id: int = 0):
        super().__init__(code, message)
        self.fatal = fatal
        self.request_id = request_id


def frame_length(buf: bytes | bytearray | memoryview, offset: int = 0) -> int | None:
    """The length of the frame starting at ``offset``, or None if fewer than 4 bytes are buffered.

    Raises a fatal :class:`ParseError` for a length below the header size or above
    ``MAX_MESSAGE_SIZE`` (the stream cannot be resynchronised after that).
    """
    if len(buf) - offset < 4:
        return None
    length: int = INT32.unpack_from(buf, offset)[0]
    if length < HEADER_SIZE or length > MAX_MESSAGE_SIZE:
        raise ParseError(
            ErrorCode.ProtocolError,
            f"Invalid message length {length}: must be between {HEADER_SIZE} and {MAX_MESSAGE_SIZE}",
            fatal=True,
        )
    return length


# A named tuple made from its fields' tuple in one C call (``_make`` is a Python call around this).
_new_header = tuple.__new__


def parse_header(message: bytes | bytearray | memoryview) -> MsgHeader:
    """The header of one complete frame (``len(message)`` must equal its declared length)."""
    size = len(message)
    if size < HEADER_SIZE:
        raise ParseError(ErrorCode.ProtocolError, "Message is shorter than its 16-byte header", fatal=True)
    header = _new_header(MsgHeader, HEADER.unpack_from(message, 0))
    if header.length != size:
        raise ParseError(
            ErrorCode.ProtocolError,
            f"Message length {header.length} does not match the {size} bytes received",
            fatal=True,
        )
    return header


def read_cstring(
    data: bytes, offset: int, what: str, request_id: int = 0, limit: int | None = None
) -> tuple[str, int]:
    """A NUL-terminated UTF-8 string at ``offset`` of ``data`` (ending before ``limit``); returns it and
    the offset after the NUL."""
    end = data.find(b"\x00", offset, len(data) if limit is None else limit)
    if end < 0:
        raise ParseError(ErrorCode.ProtocolError, f"Unterminated {what}", request_id=request_id)
    try:
        return data[offset:end].decode("utf-8"), end + 1
    except UnicodeDecodeError:
        raise ParseError(ErrorCode.InvalidBSON, f"Invalid UTF-8 in {what}", request_id=request_id) from None
