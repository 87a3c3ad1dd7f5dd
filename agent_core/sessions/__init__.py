"""Where a session lives on disk and its append-only log: writing, replaying, repairing."""
