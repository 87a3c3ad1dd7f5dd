"""The one way a screen finds its stylesheets: the `.tcss` files shipped inside the `styles`
package, next to its `__init__.py`, in a checkout and in an installed wheel alike. (Textual opens
CSS_PATH as files, so a path on disk is what it needs; `importlib.resources` would add 4 ms of
imports to every start for nothing more.)"""
from __future__ import annotations

from pathlib import Path, PurePath

import styles

ROOT = Path(styles.__file__).resolve().parent


def stylesheets(*names: str) -> list[str | PurePath]:
    """The paths of these `.tcss` files (typed as Textual's CSS_PATH takes a list); a missing one is
    an error here, at import, rather than a blank screen."""
    paths: list[str | PurePath] = [ROOT / name for name in names]
    missing = [name for name in names if not (ROOT / name).is_file()]
    if missing:
        raise FileNotFoundError(f"ctxtui's stylesheets are missing from {ROOT}: {', '.join(missing)} "
                                f"(reinstall ctxtui)")
    return paths
