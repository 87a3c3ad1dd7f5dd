"""The error for a setting the user must fix. Its own module so that what config.py imports
(sessions, for the state folder) can raise it too without importing config back."""
from compaction.scrub import scrub

from agent_core.security.visible_text import visible


class ConfigError(ValueError):
    """A configuration value the user must fix; the message says which one and how (exit 2).
    Its text often quotes a path or a value from a repository's `.env`, so it is scrubbed of
    secrets and its control characters are made visible before anyone prints it."""

    def __init__(self, message: str = "") -> None:
        super().__init__(visible(scrub(str(message))))
