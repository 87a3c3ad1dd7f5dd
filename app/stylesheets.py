"""The one way a screen finds its stylesheets: the `.tcss` files shipped inside the `styles`
package, next to its `__init__.py`, in a checkout and in an installed wheel alike. (Textual opens
CSS_PATH as files, so a path on disk is what it needs; `importlib.resources` would add 4 ms of
imports to every start for nothing more.)"""
from __future__ import annotations

from pathlib import Path

import styles

ROOT = Path(styles.__file__).resolve().parent


def stylesheets(*names: str) -> list[Path]:
    """The paths of these `.tcss` files (Textual's CSS_PATH takes paths); a missing one is an error
    here, at import, rather than a blank screen."""
    paths = [ROOT / name for name in names]
    missing = [p.name for p in paths if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"ctxtui's stylesheets are missing from {ROOT}: {', '.join(missing)} "
                                f"(reinstall ctxtui)")
    return paths
