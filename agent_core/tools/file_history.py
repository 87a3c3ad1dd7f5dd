"""What the agent's file tools changed, and each file as it was before: the ground for the changed
files list (`/cost`, the side pane), `/diff`, and `/rewind` putting files back.

Before write_file or edit_file first changes a file after a prompt, its bytes are copied to the
session's folder (`<session>/file-history/<n>.bak`, 0600; a file that did not exist is recorded as
absent). The index of those copies is one JSON line each in `index.jsonl`, appended, so a resumed
session still knows them and the cost of a change does not grow with the session. Only the copies
of the first change per file per prompt are kept: what a rewind to that prompt restores.

The bash tool's changes are not seen (nobody can tell what a command touched); the docs say so.
Files over `MAX_BYTES` are listed as changed but not copied, and cannot be restored; nor can one
whose copy could not be written (a full disk), which `write_error` then says.

Each file's first copy is kept in an index as it is made, so the changed files list (asked after
every write or edit) reads it without going through the session's copies."""
from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from compaction.private_dir import ensure_private_dir

from agent_core.regular_file import open_regular

MAX_BYTES = 5 * 1024 * 1024
INDEX = "index.jsonl"


@dataclass(frozen=True)
class Copy:
    seq: int                 # order of the changes in the session
    checkpoint: int          # the prompt it follows (FileHistory.checkpoint)
    path: str                # absolute
    shown: str               # as the model and the user see it (workspace-relative)
    existed: bool            # False: the change created the file
    backup: str | None       # the copy's file name, None when absent or too large
    too_large: bool = False  # over MAX_BYTES: no copy was tried


class FileHistory:
    """Thread-safe: tools call `before_change` from their worker threads."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        self.copies: list[Copy] = []
        self.checkpoints: dict[str, int] = {}   # prompt entry uuid -> checkpoint number
        self._first: dict[str, Copy] = {}       # path -> its first copy: the file before the session
        self._folder_ready = False
        self._checkpoint = 0
        self._seen: set[tuple[int, str]] = set()
        self._lock = threading.Lock()
        self.write_error: str | None = None      # the last reason a copy could not be kept
        if folder is not None:
            self._load()

    def checkpoint(self, prompt_uuid: str) -> None:
        """A prompt was sent: changes from now on belong to it."""
        with self._lock:
            self._checkpoint += 1
            self.checkpoints[prompt_uuid] = self._checkpoint
            self._record({"checkpoint": self._checkpoint, "prompt": prompt_uuid})

    def before_change(self, path: Path, shown: str) -> None:
        """Keep `path` as it is now, once per prompt; never raises (a failed copy only means that
        the change cannot be restored, which `write_error` says)."""
        key = os.path.abspath(path)
        with self._lock:
            if (self._checkpoint, key) in self._seen:
                return
            self._seen.add((self._checkpoint, key))
            seq = len(self.copies) + 1
            existed, backup, too_large = False, None, False
            try:
                st = os.lstat(key)
                existed = True
                if st.st_size > MAX_BYTES:
                    too_large = True
                elif self.folder is not None:
                    backup = f"{seq}.bak"
                    self._write_copy(Path(key), self.folder / backup)
            except FileNotFoundError:
                pass
            except OSError as e:    # not restorable: content() says so
                backup, self.write_error = None, f"could not keep a copy of {shown}: {e.strerror or e}"
            copy = Copy(seq, self._checkpoint, key, shown, existed, backup, too_large)
            self._add(copy)
            self._record({"seq": seq, "checkpoint": copy.checkpoint, "path": key, "shown": shown,
                          "existed": existed, "backup": backup, "too_large": too_large})

    def originals(self) -> dict[str, Copy]:
        """Each changed file's first copy: the file as it was before the session changed it (a
        snapshot: tools add copies from their threads while the list is measured in another)."""
        with self._lock:
            return dict(self._first)

    def _add(self, copy: Copy) -> None:
        self.copies.append(copy)
        self._first.setdefault(copy.path, copy)

    def since(self, prompt_uuid: str) -> dict[str, Copy] | None:
        """Each file changed at or after that prompt, with its copy from just before: what a rewind
        to it restores. None when the prompt is not known (sent before file history existed)."""
        n = self.checkpoints.get(prompt_uuid)
        if n is None:
            return None
        first: dict[str, Copy] = {}
        for c in self.copies:
            if c.checkpoint >= n:
                first.setdefault(c.path, c)
        return first

    def content(self, copy: Copy) -> bytes | None:
        """The copy's bytes; None for a file that did not exist. Raises OSError when it is gone."""
        if not copy.existed:
            return None
        if copy.backup is None or self.folder is None:
            raise OSError(f"no copy of {copy.shown} was kept")
        with open_regular(self.folder / copy.backup, follow_symlinks=False) as f:
            return f.read()

    # -- storage ------------------------------------------------------------------------------

    def _ensure_folder(self) -> None:
        assert self.folder is not None
        if not self._folder_ready:
            ensure_private_dir(self.folder)
            self._folder_ready = True

    def _write_copy(self, src: Path, dest: Path) -> None:
        self._ensure_folder()
        with open_regular(src, follow_symlinks=False) as f:     # never a FIFO, a device or through a link
            data = f.read()
        fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)

    def _record(self, obj: dict) -> None:
        if self.folder is None:
            return
        try:
            self._ensure_folder()
            fd = os.open(self.folder / INDEX, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC,
                         0o600)
            with os.fdopen(fd, "a", encoding="utf-8") as f:
                f.write(json.dumps(obj) + "\n")
        except OSError as e:
            self.write_error = f"could not write the file history: {e.strerror or e}"

    def _load(self) -> None:
        assert self.folder is not None
        try:
            lines = (self.folder / INDEX).read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return
        for line in lines:
            try:
                obj = json.loads(line)
            except ValueError:
                continue            # a line cut by a crash: the rest still counts
            if not isinstance(obj, dict):
                continue
            if "prompt" in obj and isinstance(obj.get("checkpoint"), int):
                self._checkpoint = max(self._checkpoint, obj["checkpoint"])
                self.checkpoints[str(obj["prompt"])] = obj["checkpoint"]
            elif isinstance(obj.get("seq"), int) and isinstance(obj.get("path"), str):
                backup = obj.get("backup")
                self._add(Copy(obj["seq"], int(obj.get("checkpoint", 0)), obj["path"],
                                        str(obj.get("shown", obj["path"])), bool(obj.get("existed")),
                                        backup if isinstance(backup, str) and backup.endswith(".bak")
                                        and "/" not in backup else None, bool(obj.get("too_large"))))
