"""Fail points, as drivers' test suites drive them (``configureFailPoint``, test commands only).

Three fail points exist (those drivers' suites arm). ``failCommand``, with mongod's semantics: its ``data`` names the commands it
applies to (``failCommands``, names or aliases) and optionally an ``appName`` and a ``namespace``; when
it fires for a command it may block the connection (``blockConnection`` + ``blockTimeMS``, an asyncio
sleep: other connections go on), close the connection without a reply (``closeConnection``), or fail
the command with ``errorCode`` ("Failing command via 'failCommand' failpoint", ``errorLabels``,
``errorExtraInfo``). A ``writeConcernError`` is added to the reply of a command that ran. Modes:
``alwaysOn``, ``off``, ``{times: n}``, ``{skip: n}``, ``{activationProbability: p}``. The ``appName``
filter also matches a connection's first ``hello``, whose ``client.application.name`` is read from the
command itself (mongod parses the metadata before it checks fail points).
``maxTimeAlwaysTimeOut``: every command with a ``maxTimeMS`` fails with 50 MaxTimeMSExpired before it
runs, and an operation that has a deadline (a getMore of a cursor opened with maxTimeMS) at its next
interruption check. ``failGetMoreAfterCursorCheckout``: a ``getMore`` fails with ``data.errorCode``.

Dispatch reads ``FailPoints.active`` (one attribute) before anything else, so a server without an
armed fail point pays nothing. Event-loop thread only.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any, cast

from bson.decimal128 import Decimal128

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.expr_base import type_name
from tidemark.query.expr_conversion import format_double
from tidemark.query.value_repr import bson_repr
from tidemark.query.values import is_number
from tidemark.top import command_namespace

MESSAGE = "Failing command via 'failCommand' failpoint"
FAIL_COMMAND = "failCommand"
MAX_TIME_ALWAYS_TIME_OUT = "maxTimeAlwaysTimeOut"
FAIL_GET_MORE = "failGetMoreAfterCursorCheckout"
KNOWN = (FAIL_COMMAND, MAX_TIME_ALWAYS_TIME_OUT, FAIL_GET_MORE)


@dataclass
class FailPoint:
    mode: str = "off"  # off | alwaysOn | times | skip | probability
    remaining: int = 0
    probability: float = 0.0
    data: dict = field(default_factory=dict)
    entered: int = 0

    @property
    def on(self) -> bool:
        return self.mode != "off"

    def fire(self) -> bool:
        """One pass through the fail point (the caller has checked that it applies)."""
        if self.mode == "off":
            return False
        self.entered += 1
        if self.mode == "times":
            self.remaining -= 1
            if self.remaining <= 0:
                self.mode = "off"
            return True
        if self.mode == "skip":
            if self.remaining > 0:
                self.remaining -= 1
                return False
            return True
        if self.mode == "probability":
            return random.random() < self.probability
        return True


@dataclass(frozen=True, slots=True)
class Action:
    """What failCommand does to one command."""

    block_ms: int = 0
    close: bool = False
    error: MongoError | None = None


def _parse_mode(mode: Any) -> tuple[str, int, float]:
    """mongod's FailPoint::parseBSON: a string ("off", "alwaysOn") or a document whose first known key,
    in the order times, skip, activationProbability, decides (a driver sends ``{times: 1, skip: 0}``)."""
    if type(mode) is str:
        if mode in ("off", "alwaysOn"):
            return mode, 0, 0.0
        raise MongoError(ErrorCode.BadValue, f"unknown mode: {mode}")
    if not isinstance(mode, dict):
        raise MongoError(ErrorCode.TypeMismatch, "'mode' must be a string or JSON object")
    for key in ("times", "skip"):
        if key in mode:
            count = _integer_field(mode, key)
            if count < 0:
                raise MongoError(ErrorCode.BadValue, f"'{key}' option to 'mode' must be positive")
            if count > 2**31 - 1:
                raise MongoError(ErrorCode.BadValue, f"'{key}' option to 'mode' is too large")
            return key, count, 0.0
    if "activationProbability" in mode:
        value = mode["activationProbability"]
        if isinstance(value, bool) or not is_number(value):
            raise MongoError(ErrorCode.BadValue,
                             "'activationProbability' option to 'mode' must be a double between 0 and 1")
        probability = float(value.to_decimal()) if isinstance(value, Decimal128) else float(value)
        if not 0.0 <= probability <= 1.0:
            raise MongoError(ErrorCode.BadValue,
                             f"activationProbability must be between 0.0 and 1.0; found {format_double(probability)}")
        return "probability", 0, probability
    raise MongoError(ErrorCode.BadValue,
                     "'mode' must be one of 'off', 'alwaysOn', '{times:n}', '{skip:n}' or '{activationProbability:p}'")


def _integer_field(document: dict, key: str) -> int:
    """bsonExtractIntegerField: a number holding a 64-bit integer exactly."""
    value = document[key]
    if isinstance(value, bool) or not is_number(value):
        raise MongoError(ErrorCode.TypeMismatch,
                         f'Expected field "{key}" to have numeric type, but found {type_name(value)}')
    number = float(value.to_decimal()) if isinstance(value, Decimal128) else value
    if number != number or number in (math.inf, -math.inf) or int(number) != number:
        raise MongoError(ErrorCode.BadValue, f'Expected field "{key}" to have a value exactly representable as a '
                                             f"64-bit integer, but found {key}: {bson_repr(value)}")
    return int(number)


class FailPoints:
    def __init__(self) -> None:
        self.points = {name: FailPoint() for name in KNOWN}
        self.fail_command = self.points[FAIL_COMMAND]
        self.active = False

    def _refresh(self) -> None:
        self.active = any(point.on for point in self.points.values())

    def configure(self, name: Any, mode: Any, data: Any) -> int:
        """Set a fail point's mode and data; returns how many times it was entered before."""
        if name not in KNOWN:
            raise MongoError(ErrorCode.FailPointSetFailed, f"{name} not found")
        if data is not None and not isinstance(data, dict):
            raise MongoError(ErrorCode.TypeMismatch, "the 'data' option must be a JSON object")
        kind, count, probability = _parse_mode(mode)
        point = self.points[name]
        entered = point.entered
        point.mode = "off" if kind == "times" and count == 0 else kind
        point.remaining, point.probability = count, probability
        if data is not None:
            point.data = dict(data)
        self._refresh()
        return entered

    def time_out_now(self) -> Any:
        """For ``Operation.time_out_now``: a callable passing through ``maxTimeAlwaysTimeOut`` (True
        when it fires), or None while it is off."""
        if not self.points[MAX_TIME_ALWAYS_TIME_OUT].on:
            return None

        def fire() -> bool:
            fired = self.points[MAX_TIME_ALWAYS_TIME_OUT].fire()
            self._refresh()  # called on pool threads too: a flag write, like fire()'s own counters
            return fired

        return fire

    def other_failure(self, name: str, cmd: dict) -> MongoError | None:
        """What ``maxTimeAlwaysTimeOut`` or ``failGetMoreAfterCursorCheckout`` does to this command."""
        error = None
        point = self.points[MAX_TIME_ALWAYS_TIME_OUT]
        max_time = cmd.get("maxTimeMS")
        if point.on and max_time and not isinstance(max_time, bool) and point.fire():
            error = MongoError(ErrorCode.MaxTimeMSExpired, "operation exceeded time limit")
        point = self.points[FAIL_GET_MORE]
        if error is None and name == "getMore" and point.on and point.fire():
            code = point.data.get("errorCode")
            if not isinstance(code, int) or isinstance(code, bool):
                code = ErrorCode.InternalError
            error = MongoError(code, "Hit the 'failGetMoreAfterCursorCheckout' failpoint")
        self._refresh()
        return error

    def _applies(self, names: tuple[str, ...], cmd: dict, conn: Any) -> dict | None:
        point = self.fail_command
        data = point.data
        failing = data.get("failCommands")
        if not data.get("failAllCommands") and not (
                isinstance(failing, list) and any(name in failing for name in names)):
            return None
        app = data.get("appName")
        if app is not None:
            client = getattr(conn, "client", None) or cmd.get("client")  # a first hello: its own metadata
            application = client.get("application") if isinstance(client, dict) else None
            if app != (application.get("name") if isinstance(application, dict) else None):
                return None
        if "namespace" in data and type(cmd.get("$db")) is str:
            if data["namespace"] != command_namespace(names[0], cmd, cmd["$db"]):
                return None
        return data

    def before(self, names: tuple[str, ...], cmd: dict, conn: Any) -> Action | None:
        """The failure to inject before a command runs (mongod: only with closeConnection,
        blockConnection or errorCode), or None. Raises 72 for a block without blockTimeMS."""
        data = self._applies(names, cmd, conn)
        if data is None:
            return None
        close = data.get("closeConnection") is True
        block = data.get("blockConnection") is True
        code = data.get("errorCode")
        has_code = isinstance(code, int) and not isinstance(code, bool)
        if not (close or block or has_code) or not self.fail_command.fire():
            return None
        self._refresh()
        block_ms: Any = 0
        if block:
            block_ms = data.get("blockTimeMS")
            if not isinstance(block_ms, int) or isinstance(block_ms, bool):
                raise MongoError(ErrorCode.InvalidOptions, "must specify 'blockTimeMS' when 'blockConnection' is true")
            if block_ms < 0:
                raise MongoError(ErrorCode.InvalidOptions, "'blockTimeMS' must be non-negative")
        error = None
        if close:
            error = MongoError(50985, MESSAGE)
        elif has_code:
            extra: dict[str, Any] = {}
            if isinstance(data.get("errorExtraInfo"), dict):
                extra.update(data["errorExtraInfo"])
            if isinstance(data.get("errorLabels"), list):
                extra["errorLabels"] = list(data["errorLabels"])
            error = MongoError(cast(int, code), MESSAGE, extra=extra)  # has_code: an int
        return Action(block_ms=block_ms, close=close, error=error)

    def write_concern_error(self, names: tuple[str, ...], cmd: dict, conn: Any) -> dict | None:
        """The ``writeConcernError`` to add to a reply (and its ``errorLabels``), or None."""
        data = self._applies(names, cmd, conn)
        if data is None or not isinstance(data.get("writeConcernError"), dict) or not self.fail_command.fire():
            return None
        self._refresh()
        extra: dict[str, Any] = {"writeConcernError": dict(data["writeConcernError"])}
        if isinstance(data.get("errorLabels"), list):
            extra["errorLabels"] = list(data["errorLabels"])
        return extra
