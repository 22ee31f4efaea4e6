"""A command document as mongod prints it in messages (``{ find: "c", filter: {}, $db: "test" }``),
with secrets replaced and the size bounded.

Secret fields (``pwd`` of createUser/updateUser, SASL ``payload`` ...) become ``"xxx"`` by THE rule,
:func:`tidemark.auth.redaction.redact_command` (mongod's snipForLogging);
OP_MSG document sequences are left out (mongod prints the command body only); a long rendering is
cut at :data:`LIMIT` characters so a huge insert cannot make a huge message.
"""

from __future__ import annotations

import datetime
import json
import uuid
from typing import Any

from bson.binary import Binary
from bson.objectid import ObjectId

from tidemark.auth.redaction import redact_command
from tidemark.protocol.messages import RawDocuments

LIMIT = 4096


class _Full(Exception):
    pass


class _Out(list):
    size = 0


def render_command(cmd: dict[str, Any]) -> str:
    out = _Out()
    cmd, _ = redact_command(cmd)
    try:
        _value(cmd, out)
    except _Full:
        return "".join(out)[:LIMIT] + "..."
    return "".join(out)


def _emit(out: _Out, text: str) -> None:
    out.append(text)
    out.size += len(text)
    if out.size > LIMIT:
        raise _Full


def _value(value: Any, out: _Out) -> None:
    if isinstance(value, dict):
        if not value:
            _emit(out, "{}")
            return
        _emit(out, "{ ")
        first = True
        for key, item in value.items():
            if isinstance(item, RawDocuments):
                continue
            if not first:
                _emit(out, ", ")
            first = False
            _emit(out, f"{key}: ")
            _value(item, out)
        _emit(out, " }")
    elif isinstance(value, list):
        if not value:
            _emit(out, "[]")
            return
        _emit(out, "[ ")
        for i, item in enumerate(value):
            if i:
                _emit(out, ", ")
            _value(item, out)
        _emit(out, " ]")
    elif isinstance(value, bool):
        _emit(out, "true" if value else "false")
    elif value is None:
        _emit(out, "null")
    elif type(value) is str:
        _emit(out, json.dumps(value, ensure_ascii=False))
    elif isinstance(value, float):
        _emit(out, repr(value) if not value.is_integer() else f"{value:.1f}")
    elif isinstance(value, int):
        _emit(out, str(int(value)))
    elif isinstance(value, uuid.UUID):
        _emit(out, f'UUID("{value}")')
    elif isinstance(value, ObjectId):
        _emit(out, f"ObjectId('{value}')")
    elif isinstance(value, datetime.datetime):
        _emit(out, f"new Date({int(value.replace(tzinfo=datetime.UTC).timestamp() * 1000)})")
    elif isinstance(value, (bytes, Binary)):
        subtype = getattr(value, "subtype", 0)
        _emit(out, f"BinData({subtype}, {bytes(value).hex().upper()[:64]})")
    else:
        _emit(out, str(value))
