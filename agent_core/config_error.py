"""The error for a setting the user must fix. Its own module so that what config.py imports
(sessions, for the state folder) can raise it too without importing config back."""


class ConfigError(ValueError):
    """A configuration value the user must fix; the message says which one and how (exit 2)."""
