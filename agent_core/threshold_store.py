"""The auto-compact threshold a user sets live (`/threshold`), kept per model in the user config
file (`[autocompact_pct_by_model]`, read back by `config.load_config` for that model when no flag or
environment variable says otherwise).

The file is the user's: it is edited in place with tomlkit, so its comments, order and every other
setting stay as they were (an API key in it included: nothing is scrubbed here, unlike the files
ctxtui owns), then written to a temporary file beside it and renamed over it, keeping its mode
(0600 for a new file); a symlinked file is written where it points."""
from __future__ import annotations

import os
import tomllib
from pathlib import Path

from agent_core.config import PCT_BY_MODEL
from agent_core.regular_file import open_regular
from compaction.transcript import replace_file

MAX_BYTES = 1 << 20


def save(path: Path, model: str, pct: float | None) -> None:
    """Keep `pct` for `model` (None: forget it, so the default or the file's own setting applies).
    Raises OSError (the message says which file) or ValueError (a file that is not TOML)."""
    import tomlkit  # noqa: PLC0415  (start-up time: only when a threshold is saved)

    path = Path(os.path.realpath(path))       # a config file linked from a dotfiles folder stays a link
    text, mode = _read(path)
    try:
        doc = tomlkit.parse(text)
    except tomlkit.exceptions.ParseError as e:
        raise ValueError(f"{path} is not valid TOML ({e}); the threshold holds for this session only") from None
    table = doc.get(PCT_BY_MODEL)
    if table is None:
        if pct is None:
            return
        table = tomlkit.table()
        doc[PCT_BY_MODEL] = table
    if pct is None:
        table.pop(model, None)
    else:
        table[model] = int(pct) if float(pct).is_integer() else float(pct)
    new = tomlkit.dumps(doc)
    tomllib.loads(new)          # what load_config will read back
    _replace(path, new, mode)


def _read(path: Path) -> tuple[str, int]:
    try:
        with open_regular(path) as f:
            st = os.fstat(f.fileno())
            if st.st_size > MAX_BYTES:
                raise OSError(f"{path} is larger than {MAX_BYTES:,} bytes")
            return f.read().decode("utf-8"), st.st_mode & 0o777
    except FileNotFoundError:
        return "", 0o600


def _replace(path: Path, text: str, mode: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    replace_file(path, text, mode)
