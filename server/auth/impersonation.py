"""What a command may claim about who runs it: the rules mongod applies to every command before its
own authorization check, whatever the command (``hello`` included).

- ``$audit`` impersonation metadata (``$impersonatedUser`` / the older ``$impersonatedUsers``,
  ``$impersonatedRoles``; what a mongos forwards): naming any user or role needs ``impersonate`` on
  the cluster, else 13 "Unauthorized use of impersonation metadata." (service_entry_point_common.cpp
  after rpc::readImpersonatedUserMetadata, which ignores an ``$audit`` naming nobody).
- ``lsid.uid`` (the session's user digest): a client may give its own user's digest; any other needs
  ``impersonate`` on the cluster, else 13 "Unauthorized to set user digest in LogicalSessionId"
  (logical_session_id_helpers.cpp makeLogicalSessionId).

Both apply only with access control on (mongod's privilege checks pass otherwise).
"""

from __future__ import annotations

from typing import Any

from tidemark.auth import resources as R
from tidemark.auth.names import session_digest
from tidemark.protocol.errors import ErrorCode, MongoError

_IMPERSONATION_FIELDS = ("$impersonatedUser", "$impersonatedUsers", "$impersonatedRoles")


def check_audit(cmd: dict, privileges: dict[R.Pattern, frozenset] | None) -> None:
    """Refuse ``$audit`` metadata naming a user or roles from a caller (its ``privileges``, None when
    unauthenticated) who may not impersonate (mongod's ImpersonationSessionGuard, before the command's
    privilege check)."""
    audit = cmd.get("$audit")
    if isinstance(audit, dict) and any(audit.get(f) for f in _IMPERSONATION_FIELDS) and not _may_impersonate(privileges):
        raise MongoError(ErrorCode.Unauthorized, "Unauthorized use of impersonation metadata.")


def check_uid(cmd: dict, privileges: dict[R.Pattern, frozenset] | None, name: Any) -> None:
    """Refuse an ``lsid.uid`` other than the caller's own (its user ``name``) from a caller who may not
    impersonate (makeLogicalSessionId, in initializeOperationSessionInfo: before the session is used)."""
    lsid = cmd.get("lsid")
    if isinstance(lsid, dict) and "uid" in lsid:
        uid = lsid["uid"]
        if not (isinstance(uid, bytes) and bytes(uid) == session_digest(name)) and not _may_impersonate(privileges):
            raise MongoError(ErrorCode.Unauthorized, "Unauthorized to set user digest in LogicalSessionId")


def _may_impersonate(privileges: dict[R.Pattern, frozenset] | None) -> bool:
    return privileges is not None and R.is_authorized(privileges, R.CLUSTER, ("impersonate",))
