"""THE redaction rule: which fields of which commands are secret, and the one function that hides them.

mongod's ``Command::snipForLogging``: a command declares its ``sensitiveFieldNames`` and every
top-level field of that name is shown as ``"xxx"`` wherever the command is shown — the "Slow query"
log line (and so ``getLog``), the profiler's ``system.profile`` entries, the 13 "not authorized ...
to execute command { ... }" message, and here also ``currentOp`` / ``$currentOp`` (whose entry then
says ``redacted: true``). :func:`redact_command` is used by all of them (server/profiler.py,
server/operations.py, server/auth/render.py); nothing else decides what is secret.

The table is mongod 7.0's ``sensitiveFieldNames``: ``pwd`` of createUser/updateUser, the SASL
``payload`` of saslStart/saslContinue (and the legacy copydbsaslstart), the Queryable Encryption
tokens; plus what carries the same secrets in Tidemark: hello's ``speculativeAuthenticate`` (a SASL
first message) and the legacy ``authenticate``'s ``key``. Command names compare case-insensitively
(``isMaster`` / ``ismaster``).
"""

from __future__ import annotations

from typing import Any

REDACTED = "xxx"

SENSITIVE_FIELDS: dict[str, frozenset[str]] = {
    name.lower(): frozenset(fields) for name, fields in {
        "createUser": ("pwd",),
        "updateUser": ("pwd",),
        "saslStart": ("payload",),
        "saslContinue": ("payload",),
        "copydbsaslstart": ("payload",),
        "authenticate": ("key",),
        "hello": ("speculativeAuthenticate",),
        "isMaster": ("speculativeAuthenticate",),
        "cleanupStructuredEncryptionData": ("cleanupTokens",),
        "compactStructuredEncryptionData": ("compactionTokens",),
        "getQueryableEncryptionCountInfo": ("tokens",),
    }.items()
}


def sensitive_fields(name: str) -> frozenset[str]:
    """The secret top-level fields of command ``name`` (empty for most commands)."""
    return SENSITIVE_FIELDS.get(name.lower(), frozenset()) if type(name) is str else frozenset()


def redact_command(cmd: dict[str, Any], name: str | None = None) -> tuple[dict[str, Any], bool]:
    """(the command as it may be shown, whether anything was hidden). ``name`` defaults to the
    command's first field. The command itself is never modified: a redacted one is a shallow copy."""
    if name is None:
        name = next(iter(cmd), "") if cmd else ""
    fields = sensitive_fields(name)
    if not fields or not any(key in fields for key in cmd):
        return cmd, False
    return {key: (REDACTED if key in fields else value) for key, value in cmd.items()}, True
