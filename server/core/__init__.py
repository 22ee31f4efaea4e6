"""The collection core: storage-touching helpers every layer above shares (below ``tidemark.commands``;
see server/core/README.md). Nothing here takes a command context."""
