"""ctxtui's version, in one place: the package metadata reads it from here (hatch's `path`
source), and a session file or `--version` reads it without importlib.metadata, which with the
email package under it is 10 ms of the TUI's first paint."""
__version__ = "0.1.0"
