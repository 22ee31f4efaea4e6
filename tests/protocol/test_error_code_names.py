"""Error codes and codeNames as MongoDB's error_codes.yml has them. Six of Tidemark's own codes had other
numbers (so clients got another code, or the name of another error: 149 is NoConfigPrimary, not
ViewDepthLimitExceeded), and codes Tidemark never raises itself, as a fail point injects them, were
answered ``Location<code>`` (found by the PHP driver's suite: a failCommand with 280 had no codeName
ChangeStreamFatalError)."""

from __future__ import annotations

import pytest

from tidemark.protocol.errors import OTHER_CODE_NAMES, ErrorCode, MongoError, code_name

# (code, name) pairs of error_codes.yml, among them every code Tidemark had numbered otherwise
YML = [
    (165, "ViewDepthLimitExceeded"), (161, "IncompatibleCollationVersion"), (347, "APIMismatchError"),
    (105, "IncompatibleShardingMetadata"), (188, "IncompatibleServerVersion"), (207, "InvalidUUID"),
    (149, "NoConfigPrimary"), (250, "StaleChunkHistory"), (83, "RemoteResultsUnavailable"),
    (124, "IncompatibleElectionProtocol"), (9001, "SocketException"),
    (64, "WriteConcernTimeout"), (112, "WriteConflict"), (143, "CursorInUse"), (189, "PrimarySteppedDown"),
    (266, "FailPointSetFailed"), (280, "ChangeStreamFatalError"), (286, "ChangeStreamHistoryLost"),
    (10058, "LegacyNotPrimary"), (13388, "StaleConfig"), (46841, "ClientMarkedKilled"),
    (11000, "DuplicateKey"), (40415, "IDLUnknownField"), (359, "CannotConvertIndexToUnique"),
]


@pytest.mark.parametrize("code, name", YML)
def test_code_names_are_mongods(code, name):
    assert code_name(code) == name
    assert MongoError(code, "x").to_reply()["codeName"] == name


def test_a_code_without_a_name_is_a_location():
    assert code_name(498) == "Location498" and code_name(5916301) == "Location5916301"


def test_one_name_per_code_and_one_code_per_name():
    names = [e.name for e in ErrorCode] + list(OTHER_CODE_NAMES.values())
    assert len(names) == len(set(names))
    assert not {e.value for e in ErrorCode} & set(OTHER_CODE_NAMES)
