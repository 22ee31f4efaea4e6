"""Access control: SCRAM authentication, users and roles, and the authorization rule of every command.

See README.md in this package for the modules and their invariants.
"""
