"""protocol/: framing, OP_MSG/OP_QUERY parsing and reply encoding, without a server."""

from __future__ import annotations

import struct

import crc32c
import pytest
from bson.int64 import Int64

from tidemark.protocol import codec
from tidemark.protocol.framing import (
    MAX_MESSAGE_SIZE,
    MsgHeader,
    OpCode,
    ParseError,
    frame_length,
    parse_header,
)
from tidemark.protocol.messages import (
    CHECKSUM_PRESENT,
    EXHAUST_ALLOWED,
    MORE_TO_COME,
    OpMsg,
    OpQuery,
    RawDocuments,
    decode_message,
    decode_reply,
    encode_op_msg,
    encode_op_msg_request,
    encode_op_query_request,
    encode_op_reply,
    materialize,
)

HEADER = struct.Struct("<iiii")


def _op_msg(body: bytes, flags: int = 0, request_id: int = 1) -> bytes:
    payload = struct.pack("<I", flags) + body
    return HEADER.pack(16 + len(payload), request_id, 0, 2013) + payload


def _error(message: bytes) -> ParseError:
    with pytest.raises(ParseError) as info:
        decode_message(message)
    return info.value


def test_frame_length_waits_for_four_bytes_and_validates_bounds():
    assert frame_length(b"\x10\x00") is None
    assert frame_length(struct.pack("<i", 16)) == 16
    assert frame_length(b"xx" + struct.pack("<i", 100), offset=2) == 100
    for bad in (15, 0, -1, MAX_MESSAGE_SIZE + 1):
        with pytest.raises(ParseError) as info:
            frame_length(struct.pack("<i", bad))
        assert info.value.fatal


def test_header_round_trips_and_must_match_frame_size():
    header = MsgHeader(20, 7, 3, OpCode.OP_MSG)
    assert parse_header(header.pack() + b"\x00" * 4) == header
    with pytest.raises(ParseError):
        parse_header(header.pack())


def test_op_msg_body_is_decoded_with_project_codec():
    message = encode_op_msg_request({"find": "c", "limit": Int64(5), "$db": "test"}, 42)
    request = decode_message(message)
    assert isinstance(request, OpMsg)
    assert request.request_id == 42
    assert request.command == {"find": "c", "limit": 5, "$db": "test"}
    assert isinstance(request.command["limit"], Int64)
    assert not request.more_to_come


def test_kind_1_sequences_fold_into_the_command_in_any_order():
    docs = [{"_id": i} for i in range(3)]
    message = encode_op_msg_request({"update": "c", "$db": "t"}, 1, sequences={"updates": docs})
    assert decode_message(message).command["updates"] == docs
    message = encode_op_msg_request({"insert": "c", "$db": "t"}, 1, sequences={"documents": docs})
    assert materialize(decode_message(message).command["documents"]) == docs
    # A kind-1 section before the body is legal too.
    seq = b"documents\x00" + b"".join(codec.encode(d) for d in docs)
    body = (
        b"\x01" + struct.pack("<i", 4 + len(seq)) + seq + b"\x00" + codec.encode({"insert": "c", "$db": "t"})
    )
    request = decode_message(_op_msg(body))
    assert materialize(request.command["documents"]) == docs
    assert request.sequence_ids == ("documents",)


def test_insert_documents_stay_raw_bytes_until_decoded():
    docs = [{"_id": i, "s": "x" * i} for i in range(4)]
    message = encode_op_msg_request({"insert": "c", "$db": "t"}, 1, sequences={"documents": docs})
    raw = decode_message(message).command["documents"]
    assert isinstance(raw, RawDocuments) and len(raw) == 4
    encoded = [codec.encode(d) for d in docs]
    assert [bytes(raw.buffer[o:o + len(e)]) for o, e in zip(raw.offsets, encoded, strict=True)] == encoded
    assert raw.decode() == docs


def test_empty_document_sequence_folds_to_empty_list():
    message = encode_op_msg_request({"insert": "c", "$db": "t"}, 1, sequences={"documents": []})
    assert materialize(decode_message(message).command["documents"]) == []


def test_flags_more_to_come_and_exhaust_allowed_are_exposed():
    request = decode_message(
        encode_op_msg_request({"ping": 1, "$db": "a"}, 1, flags=MORE_TO_COME | EXHAUST_ALLOWED)
    )
    assert request.more_to_come and request.exhaust_allowed


def test_valid_checksum_is_verified_and_stripped():
    message = encode_op_msg_request({"ping": 1, "$db": "a"}, 1, checksum=True)
    assert struct.unpack_from("<I", message, 16)[0] & CHECKSUM_PRESENT
    assert struct.unpack_from("<I", message, len(message) - 4)[0] == crc32c.crc32c(message[:-4])
    assert decode_message(message).command == {"ping": 1, "$db": "a"}


def test_bad_checksum_is_a_fatal_checksum_mismatch():
    message = bytearray(encode_op_msg_request({"ping": 1, "$db": "a"}, 1, checksum=True))
    message[-1] ^= 0xFF
    error = _error(bytes(message))
    assert error.code == 288 and error.fatal
    assert error.message == "OP_MSG checksum does not match contents"


def test_unknown_required_flag_is_fatal_but_unknown_optional_flag_is_ignored():
    body = b"\x00" + codec.encode({"ping": 1, "$db": "a"})
    error = _error(_op_msg(body, flags=1 << 5))
    assert error.code == 223 and error.fatal
    assert decode_message(_op_msg(body, flags=1 << 20)).command["ping"] == 1


@pytest.mark.parametrize(
    "body, code",
    [
        (b"\x00" + codec.encode({"a": 1}) + b"\x00" + codec.encode({"b": 1}), 40430),
        (b"\x09" + codec.encode({"a": 1}), 40432),
        (b"\x01" + struct.pack("<i", 6) + b"ids\x00"[:2], 17),
        (b"", 17),
    ],
)
def test_malformed_sections_are_non_fatal_errors_with_mongod_codes(body, code):
    error = _error(_op_msg(body, request_id=9))
    assert error.code == code
    assert not error.fatal
    assert error.request_id == 9


def test_missing_body_duplicate_sequence_and_body_field_clash():
    seq = b"\x01" + struct.pack("<i", 8) + b"ids\x00"
    assert _error(_op_msg(seq)).code == 40587
    body = b"\x00" + codec.encode({"x": 1, "$db": "a"})
    assert _error(_op_msg(body + seq + seq)).code == 40431
    clash = b"\x00" + codec.encode({"x": 1, "ids": [], "$db": "a"}) + seq
    assert _error(_op_msg(clash)).code == 40433


def test_more_than_two_sequences_is_fatal():
    body = b"\x00" + codec.encode({"x": 1})
    for name in (b"a", b"b", b"c"):
        body += b"\x01" + struct.pack("<i", 6) + name + b"\x00"
    error = _error(_op_msg(body))
    assert error.code == 233 and error.fatal


def test_invalid_bson_is_invalid_bson_error():
    broken = bytearray(codec.encode({"a": "xyz"}))
    broken[-1] = 7  # the terminating NUL
    assert _error(_op_msg(b"\x00" + bytes(broken))).code == 22
    seq = b"updates\x00" + b"\x06\x00\x00\x00\x00\x00"
    body = b"\x00" + codec.encode({"update": "c"}) + b"\x01" + struct.pack("<i", 4 + len(seq)) + seq
    assert _error(_op_msg(body)).code == 22


def test_insert_documents_framing_is_checked_eagerly_and_bson_on_decode():
    def insert_body(seq_docs: bytes) -> bytes:
        seq = b"documents\x00" + seq_docs
        return b"\x00" + codec.encode({"insert": "c"}) + b"\x01" + struct.pack("<i", 4 + len(seq)) + seq

    # a length prefix that overruns the sequence, or a document not ending in NUL: refused at parse time
    assert _error(_op_msg(insert_body(b"\x40\x00\x00\x00\x00\x00"))).code == 22
    assert _error(_op_msg(insert_body(b"\x06\x00\x00\x00\x00\x07"))).code == 22
    # well framed but invalid inside: the same error when the handler decodes it
    raw = decode_message(_op_msg(insert_body(b"\x06\x00\x00\x00\x00\x00"))).command["documents"]
    with pytest.raises(ParseError) as caught:
        raw.decode()
    assert caught.value.code == 22 and "document sequence 'documents'" in caught.value.message


def test_unknown_and_legacy_opcodes_are_fatal():
    assert _error(HEADER.pack(16, 1, 0, 1234)).fatal
    assert _error(HEADER.pack(20, 1, 0, OpCode.OP_INSERT) + b"\x00" * 4).fatal


def test_op_query_parses_namespace_counts_and_query():
    message = encode_op_query_request("admin.$cmd", {"ismaster": 1, "helloOk": True}, 11)
    request = decode_message(message)
    assert isinstance(request, OpQuery)
    assert (request.database, request.collection) == ("admin", "$cmd")
    assert request.number_to_return == -1 and request.number_to_skip == 0
    assert request.query == {"ismaster": 1, "helloOk": True}
    assert request.fields is None


def test_op_query_with_fields_selector_and_trailing_garbage():
    base = encode_op_query_request("a.$cmd", {"ismaster": 1}, 1)
    selector = codec.encode({"x": 1})
    with_fields = HEADER.pack(len(base) + len(selector), 1, 0, 2004) + base[16:] + selector
    assert decode_message(with_fields).fields == {"x": 1}
    garbage = HEADER.pack(len(base) + 3, 1, 0, 2004) + base[16:] + b"abc"
    assert _error(garbage).code in (17, 22)


def test_op_msg_reply_has_flags_zero_and_one_kind_0_section():
    document = codec.encode({"ok": 1.0})
    reply = encode_op_msg(document, 5, 42)
    length, request_id, response_to, opcode = HEADER.unpack_from(reply)
    assert (length, request_id, response_to, opcode) == (len(reply), 5, 42, 2013)
    assert reply[16:20] == b"\x00\x00\x00\x00" and reply[20] == 0
    assert decode_reply(reply) == {"ok": 1.0}


def test_op_reply_returns_exactly_one_document_with_cursor_zero():
    reply = encode_op_reply(codec.encode({"ok": 1.0}), 5, 42)
    assert HEADER.unpack_from(reply)[2:] == (42, 1)
    flags, cursor_id, starting_from, number_returned = struct.unpack_from("<iqii", reply, 16)
    assert (flags, cursor_id, starting_from, number_returned) == (0, 0, 0, 1)
    assert decode_reply(reply) == {"ok": 1.0}


def test_sequence_identifier_must_end_inside_its_section():
    # The section claims 6 bytes (size + "ab") but the identifier's NUL lies after it.
    body = b"\x00" + codec.encode({"x": 1}) + b"\x01" + struct.pack("<i", 6) + b"ab\x00"
    error = _error(_op_msg(body))
    assert error.code == 17 and not error.fatal


def test_non_utf8_identifier_is_invalid_bson():
    body = b"\x00" + codec.encode({"x": 1}) + b"\x01" + struct.pack("<i", 7) + b"\xff\xfe\x00"
    assert _error(_op_msg(body)).code == 22


def _sequence_error(docs: bytes) -> str:
    with pytest.raises(ParseError) as caught:
        RawDocuments(b"xx" + docs, 2, 2 + len(docs), "documents")
    assert caught.value.code == 22
    return caught.value.message


def test_document_sequence_framing_reports_the_first_bad_document():
    good = [codec.encode({"i": i, "s": "x" * i}) for i in range(5)]
    whole = b"".join(good)
    raw = RawDocuments(b"xx" + whole + b"yy", 2, 2 + len(whole), "documents")
    assert raw.offsets.tolist() == [2 + sum(map(len, good[:i])) for i in range(5)]
    assert [codec.decode(raw.buffer[o:o + len(d)]) for o, d in zip(raw.offsets, good, strict=True)] == \
           [{"i": i, "s": "x" * i} for i in range(5)]
    third = sum(map(len, good[:2]))
    unterminated = bytearray(whole)
    unterminated[third + len(good[2]) - 1] = 7
    assert _sequence_error(bytes(unterminated)).endswith(f"bad document length {len(good[2])} at offset {third}")
    # an earlier unterminated document is reported before a bad length after it
    both = bytearray(unterminated) + b"\x02\x00\x00\x00\x00"
    assert _sequence_error(bytes(both)).endswith(f"at offset {third}")
    assert _sequence_error(whole + b"\x03\x00\x00\x00\x00").endswith(f"bad document length 3 at offset {len(whole)}")
    assert _sequence_error(whole + b"\x40\x00\x00\x00\x00").endswith(f"bad document length 64 at offset {len(whole)}")
    assert _sequence_error(whole + b"\x05\x00\x00").endswith("3 trailing bytes are not a document")
    assert _sequence_error(whole[:-1] + b"\x07").endswith(f"at offset {len(whole) - len(good[4])}")
    assert len(RawDocuments(b"", 0, 0, "documents")) == 0
    # fewer than four bytes left in the buffer itself
    with pytest.raises(ParseError, match="2 trailing bytes"):
        RawDocuments(whole + b"\x05\x00", 0, len(whole) + 2, "documents")


@pytest.mark.parametrize("container", ["document", "array"])
def test_depth_checked_at_the_smallest_too_deep_body(container):
    """A body is walked for its depth only from the size where 201 levels fit (5 bytes, then 7 per
    level: type, an empty name's NUL, an empty container): the smallest too-deep body (empty names)
    is exactly that size, and is refused; arrays (names "0") are larger, and refused too."""
    from tidemark.protocol.framing import MAX_BSON_DEPTH
    from tidemark.protocol.messages import _DEPTH_WALK_BYTES

    def nested(levels: int) -> object:  # ``levels`` containers, one inside the other
        inner: object = {} if container == "document" else []
        for _ in range(levels - 1):
            inner = {"": inner} if container == "document" else [inner]
        return inner

    too_deep = codec.encode({"": nested(MAX_BSON_DEPTH)})  # the body is level 1: MAX_BSON_DEPTH + 1
    if container == "document":
        assert len(too_deep) == _DEPTH_WALK_BYTES
    else:
        assert len(too_deep) > _DEPTH_WALK_BYTES
    with pytest.raises(ParseError) as err:
        decode_message(encode_op_msg(too_deep, 1, 0))
    assert err.value.code == 15
    deepest_allowed = codec.encode({"": nested(MAX_BSON_DEPTH - 1)})
    assert decode_message(encode_op_msg(deepest_allowed, 1, 0)).command[""] == nested(MAX_BSON_DEPTH - 1)
