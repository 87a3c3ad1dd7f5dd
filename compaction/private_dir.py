"""Private folders: created 0700 and refused when they are a symlink, not a folder, or someone
else's. Its own module (os, stat and pathlib only), because `ctxtui statusline` (run on every
refresh of Claude Code's prompt) makes its state folder with it and must not load the transcript
writer (its entries, scrubbing and uuid)."""
from __future__ import annotations

import os
import stat
from pathlib import Path

FILE_MODE = 0o600
DIR_MODE = 0o700


class UnsafeDir(OSError):
    """A folder ctxtui would write into that is a symlink, not a folder, or someone else's."""


def check_private_dir(path: Path) -> None:
    """Refuse a folder that is a symlink, not a folder, or owned by another user: a planted link
    would otherwise make ctxtui chmod or write outside the place it means to."""
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        raise UnsafeDir(f"{path} is a symlink; ctxtui keeps its files only in real folders it owns. "
                        f"Remove the link, or set CTXTUI_HOME to another folder.")
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafeDir(f"{path} is not a folder; remove it, or set CTXTUI_HOME to another folder.")
    if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
        raise UnsafeDir(f"{path} belongs to another user (uid {st.st_uid}); ctxtui will not write there. "
                        f"Set CTXTUI_HOME to a folder of your own.")


def ensure_private_dir(path: Path) -> Path:
    """Create `path` (and missing parents) 0700, then check it is a real folder of ours."""
    path = Path(path)
    try:
        os.mkdir(path, DIR_MODE)
    except FileExistsError:
        pass
    except FileNotFoundError:
        path.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
    check_private_dir(path)
    if stat.S_IMODE(os.lstat(path).st_mode) != DIR_MODE:
        os.chmod(path, DIR_MODE)      # checked above: a real folder of ours, not a link
    return path
