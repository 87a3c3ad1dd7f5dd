"""What the demo model knows about the workspace: a bounded file scan, prompt keywords, ranking
and light code reading (definitions, excerpts).

Everything is a pure function of the workspace's files and the arguments, so a plan built from it
is deterministic; the scan skips hidden and vendored folders so the demo explores the project,
not its virtualenv.
"""
from __future__ import annotations

import hashlib
import os
import re
from functools import cached_property
from pathlib import Path

SKIP_DIRS = frozenset({"node_modules", "__pycache__", "venv", "site-packages", "dist", "build", "target",
                       "htmlcov"})
BINARY_EXT = frozenset({"png", "jpg", "jpeg", "gif", "ico", "webp", "pdf", "zip", "gz", "tgz", "xz", "bz2",
                        "whl", "so", "dylib", "dll", "exe", "bin", "pyc", "pyo", "class", "jar", "db",
                        "sqlite", "woff", "woff2", "ttf", "otf", "mp3", "mp4", "svg", "lock"})
MAX_FILES = 2_000
MAX_BYTES = 256_000
RANK_READS = 300          # files opened to rank by content

STOPWORDS = frozenset("""
the and for are but not you your with this that these those from into onto what which who whom how why
when where does did done doing can could should would will shall may might must have has had was were
been being its it's about over under then than there here them they their our ours out all any some each
every more most much many very just also only please show tell explain describe explore exploring look
find give list read summarize summarise overview repository repo project codebase code file files folder
directory workspace work works working make let lets want need see use used using like again same new
something anything thing things part parts bit way write create save called into via per one two three
now also still okay yes its done
""".split())

LANG = {"py": "python", "md": "markdown", "toml": "toml", "json": "json", "js": "javascript", "ts": "typescript",
        "tcss": "css", "css": "css", "sh": "bash", "yml": "yaml", "yaml": "yaml", "rs": "rust", "go": "go",
        "c": "c", "h": "c", "cpp": "cpp", "java": "java", "rb": "ruby", "html": "html", "txt": "text"}

_DEF_RE = {
    "py": re.compile(r"^\s*(?:async\s+def|def|class)\s+([A-Za-z_]\w*)"),
    "md": re.compile(r"^#{1,4}\s+(.+?)\s*$"),
    "toml": re.compile(r"^\[([^\]]+)\]"),
}
_GENERIC_DEF = re.compile(r"^\s*(?:export\s+)?(?:function|func|fn|class|struct|interface|def)\s+([A-Za-z_]\w*)")
_LINE_NO = re.compile(r"^\s*(\d+)(?:\t|: |→|\s\|\s?)")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]+")


def digest(*parts: object) -> str:
    """A stable hash of the parts (Python's hash() is salted per process, this is not)."""
    return hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).hexdigest()


def ext_of(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[-1].lower() if "." in name.lstrip(".") else ""


def excluded(rel: str) -> bool:
    """Hidden or vendored paths the demo leaves alone."""
    parts = rel.split("/")
    return any(p.startswith(".") or p in SKIP_DIRS for p in parts) or ext_of(rel) in BINARY_EXT


def keywords(prompt: str) -> list[str]:
    """Distinct content words of the prompt, in order."""
    out: list[str] = []
    for w in _WORD.findall(prompt.lower()):
        if len(w) >= 3 and w not in STOPWORDS and w not in out and not w.isdigit():
            out.append(w)
    return out


def strip_line_numbers(text: str) -> str:
    """Drop `cat -n`-style prefixes when most lines carry one (read_file output formats vary)."""
    lines = text.splitlines()
    numbered = [ln for ln in lines if _LINE_NO.match(ln)]
    if lines and len(numbered) >= 0.8 * len([ln for ln in lines if ln.strip()]):
        return "\n".join(_LINE_NO.sub("", ln, count=1) if _LINE_NO.match(ln) else ln for ln in lines)
    return text


def definitions(text: str, ext: str, limit: int = 8) -> list[str]:
    rx = _DEF_RE.get(ext, _GENERIC_DEF)
    out: list[str] = []
    for line in text.splitlines():
        m = rx.match(line)
        if m and m.group(1) not in out:
            out.append(m.group(1)[:60])
            if len(out) >= limit:
                break
    return out


def excerpt(text: str, words: list[str], lines: int = 30) -> tuple[int, list[str]]:
    """A window of the text around the first keyword hit (else the first definition): (first line, lines)."""
    all_lines = text.splitlines()
    start = 0
    for i, line in enumerate(all_lines):
        low = line.lower()
        if any(w in low for w in words):
            start = max(0, i - 3)
            break
    else:
        for i, line in enumerate(all_lines):
            if _DEF_RE["py"].match(line) or _GENERIC_DEF.match(line):
                start = max(0, i - 1)
                break
    while start < len(all_lines) - 1 and not all_lines[start].strip():
        start += 1
    chunk = all_lines[start:start + lines]
    while chunk and not chunk[-1].strip():
        chunk.pop()
    return start + 1, chunk


class Workspace:
    """A read-only view of the workspace for one request (the scan is done at most once)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._texts: dict[str, str | None] = {}

    @cached_property
    def is_git(self) -> bool:
        return (self.root / ".git").exists()

    @cached_property
    def files(self) -> list[str]:
        out: list[str] = []
        if not self.root.is_dir():
            return out
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in SKIP_DIRS)
            rel_dir = os.path.relpath(dirpath, self.root)
            for f in sorted(filenames):
                rel = f if rel_dir == "." else f"{rel_dir}/{f}".replace(os.sep, "/")
                full = Path(dirpath) / f
                if excluded(rel) or full.is_symlink():
                    continue
                out.append(rel)
                if len(out) >= MAX_FILES:
                    return out
        return out

    def relative(self, path: str) -> str | None:
        """The workspace-relative form of a path a tool printed, or None when it is not a file inside."""
        p = path.strip().strip("`'\"")
        if not p or "\x00" in p or len(p) > 500:
            return None
        try:
            full = Path(p) if os.path.isabs(p) else self.root / p
            rel = full.resolve().relative_to(self.root.resolve()).as_posix()
        except (ValueError, OSError):
            return None
        if rel == "." or excluded(rel):
            return None
        try:
            return rel if (self.root / rel).is_file() else None
        except OSError:   # a name too long for the file system: not a file of the workspace
            return None

    def text(self, rel: str) -> str | None:
        if rel not in self._texts:
            try:
                data = (self.root / rel).read_bytes()[:MAX_BYTES]
                self._texts[rel] = None if b"\x00" in data[:1024] else data.decode("utf-8", "replace")
            except OSError:
                self._texts[rel] = None
        return self._texts[rel]

    def line_count(self, rel: str) -> int:
        t = self.text(rel)
        return 0 if t is None else len(t.splitlines())

    def dominant_ext(self) -> str:
        counts: dict[str, int] = {}
        for f in self.files:
            e = ext_of(f)
            if e and e != "txt":
                counts[e] = counts.get(e, 0) + 1
        return max(sorted(counts), key=lambda e: counts[e]) if counts else ""

    def rank(self, paths: list[str], words: list[str], salt: str) -> list[str]:
        """Most relevant first: keyword in the path, then in the text; a stable hash breaks ties.
        Only the RANK_READS best by path are opened, so a big workspace stays cheap."""
        def by_path(p: str) -> tuple[int, str]:
            return (-sum(1 for w in words if w in p.lower()), digest(salt, p))

        paths = sorted(paths, key=by_path)
        head, tail = paths[:RANK_READS], paths[RANK_READS:]

        def score(p: str) -> tuple[int, str]:
            low = p.lower()
            s = sum(10 for w in words if w in low)
            text = self.text(p) or ""
            if words:
                t = text.lower()
                s += sum(3 for w in words if w in t)
            n = text.count("\n")
            s += 2 if 30 <= n <= 800 else -4 if n < 10 else 0   # substantial files say more
            return (-s, digest(salt, p))
        return sorted(head, key=score) + tail
