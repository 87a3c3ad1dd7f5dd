"""The one way a screen finds its stylesheets: as package data of `styles`, through
`importlib.resources`, so an installed wheel works as well as a checkout."""
from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def stylesheets(*names: str) -> list[Path]:
    """The paths of these `.tcss` files (Textual's CSS_PATH takes paths)."""
    root = files("styles")
    return [Path(str(root / name)) for name in names]
