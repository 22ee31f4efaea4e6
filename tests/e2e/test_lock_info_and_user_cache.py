"""lockInfo and invalidateUserCache, as a standalone mongod 7.0 answers them (Tidemark: 59
CommandNotFound).

- lockInfo (admin only; serverStatus on the cluster): the lock requests granted or pending, ``lockInfo:
  [...]`` (LockManager::getLockInfoBSON); Tidemark takes no lock a client could wait for: ``[]``. Other
  arguments are not checked (a BasicCommand).
- invalidateUserCache (admin only; invalidateUserCache on the cluster): a typed command without fields
  (40415 for one); drops the cached user and role resolutions (AuthManager.changed).
Privileges: tests/e2e/test_auth_commands_lib.py.
"""

from __future__ import annotations

import pytest
from bson.son import SON
from pymongo.errors import OperationFailure


@pytest.mark.commands("lockInfo")
@pytest.mark.parametrize("extra", [{}, {"includeStorageEngineDump": True}, {"anything": 1}])
def test_lock_info_lists_no_lock(client, extra):
    assert client.admin.command(SON([("lockInfo", 1), *extra.items()])) == {"lockInfo": [], "ok": 1.0}
    with pytest.raises(OperationFailure) as info:
        client.test.command("lockInfo")
    assert (info.value.code, info.value.details["errmsg"]) == (13, "lockInfo may only be run against the admin database.")


@pytest.mark.commands("invalidateUserCache")
def test_invalidate_user_cache(client):
    assert client.admin.command("invalidateUserCache") == {"ok": 1.0}
    with pytest.raises(OperationFailure) as info:
        client.admin.command(SON([("invalidateUserCache", 1), ("bogus", 1)]))
    assert (info.value.code, info.value.details["errmsg"]) == (
        40415, "BSON field 'invalidateUserCache.bogus' is an unknown field.")
    with pytest.raises(OperationFailure) as info:
        client.test.command("invalidateUserCache")
    assert info.value.code == 13
