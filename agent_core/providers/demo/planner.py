"""The demo's agent behaviour: a deterministic plan of tool rounds for the current prompt.

A turn goes overview (glob, sometimes a harmless command alongside) → read the most relevant
unread files in parallel with a grep for a prompt word → sometimes a deeper round (`wc -l`,
`git log`, one more file) → the final answer. Errors get a substitute call in the next round.
Everything derives from the prompt, the seed, what earlier turns read and this turn's results,
so the same request always gets the same step, and a repeated prompt reads new files.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from compaction.accounting.tokens import estimate_text

from agent_core.providers.demo.answer import compose, file_notes, observations
from agent_core.providers.demo.conversation import Turn, canon, norm_path
from agent_core.providers.demo.tool_output import grep_hits, paths_in
from agent_core.providers.demo.workspace import Workspace, digest, ext_of, keywords

MAX_ROUNDS = 5
READ_LIMIT = 300          # lines per read at most; smaller windows read less (see read_limit)
_WRITE = re.compile(r"\b(?:create|write|save)\b[^\n]*?\b(?:file|to|into|as|called|named)\s+[`'\"]?"
                    r"([\w][\w./-]*\.[A-Za-z0-9]{1,6})\b", re.I)
_EDIT = re.compile(r"\breplace\s+[`'\"](.+?)[`'\"]\s+with\s+[`'\"](.*?)[`'\"]\s+in\s+[`'\"]?([\w./-]+)", re.I | re.S)
# "compact", "/compact: focus", "compact the context, focusing on X", "please compact the conversation"
_COMPACT = re.compile(r"^\s*(?:please\s+)?/?compact(?:\s+(?:the\s+)?(?:context|conversation|history))?"
                      r"(?P<rest>(?:\s*[,:;.!-].*|\s+focus.*)?)$", re.I | re.S)
_COMPACT_ANY = re.compile(r"\bcompact\s+(?:the\s+)?(?:context|conversation|history)\b(?P<rest>.*)$", re.I | re.S)
# "read every file in compaction/", "go through all the modules under app/widgets"
_READ_ALL = re.compile(r"\b(?:read|open|go\s+through|look\s+at)\s+(?:all|every|each)\b[^\n]*?\b(?:in|under|inside)\s+"
                       r"[`'\"]?(?P<dir>[\w][\w./-]*?)[`'\"]?/?(?=[\s.,;:!?]|$)", re.I)
# Reading a folder: rounds of parallel reads, each adding at most FOLDER_ROUND of the window (within
# ctxtui's per-message result budget, so nothing read is cut to a preview), until the folder is done
# or the request would pass FOLDER_FULL of the window — where a careful agent stops reading and works
# with what it has. On ctxtui's thresholds that is between auto-compact (83.5%) and blocking (88.5%),
# so the gauge shows AUTO-COMPACT and the compaction follows.
FOLDER_ROUND = 0.2
FOLDER_FULL = 0.855
FOLDER_ROUNDS = 8
MIN_PARTIAL_LINES = 20
_FOCUS = re.compile(r"focus(?:ing|ed)?\s+on\s+(.+)$", re.I | re.S)
_EXT_WORDS = {"python": "py", "markdown": "md", "docs": "md", "documentation": "md", "readme": "md",
              "toml": "toml", "config": "toml", "style": "tcss", "styles": "tcss", "css": "tcss", "json": "json",
              "javascript": "js", "typescript": "ts", "shell": "sh", "yaml": "yml"}
_LEADS = ("Next I'll", "Now I'll", "Let me")


@dataclass
class Step:
    """One assistant message to produce: narration, then tool calls (none = final answer)."""
    text: str
    calls: list[tuple[str, dict]] = field(default_factory=list)
    intent: str = "explore"


def detect_intent(prompt: str) -> tuple[str, dict]:
    """explore | write | edit | compact | folder, with what the intent needs."""
    m = _EDIT.search(prompt)
    if m:
        return "edit", {"old": m.group(1), "new": m.group(2), "path": norm_path(m.group(3))}
    head = _COMPACT.match(prompt)
    m = head or _COMPACT_ANY.search(prompt)
    if m:
        rest = m.group("rest")
        f = _FOCUS.search(rest)
        focus = (f.group(1) if f else rest if head else "").strip(" \t\n,:;.!?-")
        return "compact", {"focus": " ".join(focus.split())[:200]}
    m = _READ_ALL.search(prompt)
    if m and not m.group("dir").startswith("/") and ".." not in m.group("dir").split("/"):
        return "folder", {"dir": norm_path(m.group("dir")).rstrip("/")}
    m = _WRITE.search(prompt)
    if m and not m.group(1).startswith("/") and ".." not in m.group(1).split("/"):
        return "write", {"path": norm_path(m.group(1))}
    return "explore", {}


def describe(name: str, inp: dict) -> str:
    if name == "glob":
        return f"list the files matching `{inp['pattern']}`"
    if name == "bash":
        return f"run `{inp['command']}`"
    if name == "read_file":
        off = inp.get("offset")
        return f"read `{inp['path']}`" + (f" from line {off}" if off else "")
    if name == "grep":
        return (f"search for `{inp['pattern']}`" + (f" in `{inp['glob']}` files" if inp.get("glob") else "")
                + (f" under `{inp['path']}/`" if inp.get("path") else ""))
    if name == "write_file":
        return f"write `{inp['path']}`"
    if name == "edit_file":
        return f"edit `{inp['path']}`"
    return "compact the conversation" + (f" (focus: {inp['focus']})" if inp.get("focus") else "")


def _join(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def plan_sentence(calls: list[tuple[str, dict]]) -> str:
    """'read `a`, `b` and `c`, and search for `x`': one clause per tool, reads grouped."""
    reads = [i for n, i in calls if n == "read_file"]
    clauses, done = [], False
    for name, inp in calls:
        if name != "read_file":
            clauses.append(describe(name, inp))
        elif not done:
            done = True
            clauses.append("read " + _join([f"`{i['path']}`" + (f" from line {i['offset']}" if i.get("offset") else "")
                                            for i in reads]))
    if len(clauses) == 1:
        return clauses[0]
    sep = ", and " if len(clauses) > 2 or " and " in clauses[0] else " and "
    return ", ".join(clauses[:-1]) + sep + clauses[-1]


class Planner:
    def __init__(self, ws: Workspace, turn: Turn, seed: int, offered: set[str], window: int = 30_000,
                 request_tokens: int = 0) -> None:
        self.ws, self.turn, self.seed, self.offered = ws, turn, seed, offered
        # a round should add a modest share of the window: 120 lines per read at 30,000, 200 from 50,000
        self.read_limit = max(40, min(READ_LIMIT, window // 150))
        self.window, self.request_tokens = window, request_tokens
        self.h = int(digest(seed, turn.prompt, *sorted(turn.read_before))[:12], 16)
        self.words = keywords(turn.prompt)
        self.intent, self.arg = detect_intent(turn.prompt)
        if self.intent == "folder" and not any(f.startswith(self.arg["dir"] + "/") for f in ws.files):
            self.intent, self.arg = "explore", {}       # no such folder here: explore for the words
        self.tried = {(c.name, canon(c.input)) for c in turn.calls}
        self.read_all = set(turn.read_before) | {norm_path(c.input.get("path")) for c in turn.calls
                                                 if c.name == "read_file"}
        self.tool_rounds = 1 if turn.after_compaction else 2 + (self.h >> 1) % 2

    # ---- what to look at -------------------------------------------------------------
    def ext(self) -> str:
        for w in self.words:
            if w in _EXT_WORDS:
                return _EXT_WORDS[w]
            if w == "py":
                return "py"
        return self.ws.dominant_ext()

    def glob_pattern(self) -> str:
        e = self.ext()
        if e == "py" and any(w in ("test", "tests", "testing") for w in self.words):
            return "**/test_*.py"
        return f"**/*.{e}" if e else "**/*"

    def pool(self) -> list[str]:
        """Files this turn's listings named, else the scan (matching the extension when possible)."""
        found: list[str] = []
        for c in self.turn.calls:
            listing = c.name == "bash" and str(c.input.get("command", "")).startswith(("ls", "find"))
            if c.ok and (c.name == "glob" or listing):
                found += [p for p in paths_in(self.ws, c.result) if p not in found]
        if found:
            return found
        e = self.ext()
        scan = self.ws.files
        return [f for f in scan if ext_of(f) == e] or scan

    def candidates(self) -> list[str]:
        pool = self.pool()
        fresh = [p for p in pool if p not in self.read_all]
        if not fresh:
            tried_now = {norm_path(c.input.get("path")) for c in self.turn.calls if c.name == "read_file"}
            fresh = [p for p in pool if p not in tried_now]
        return self.ws.rank(fresh, self.words, digest(self.seed, self.turn.prompt, *sorted(self.turn.read_before)))

    def keyword(self, shift: int = 0) -> str | None:
        if not self.words:
            return None
        return self.words[((self.h >> 5) + shift) % len(self.words)]

    def read(self, path: str) -> tuple[str, dict]:
        inp: dict = {"path": path}
        n = self.ws.line_count(path)
        if n > self.read_limit:
            inp["limit"] = self.read_limit
            text = (self.ws.text(path) or "").lower().splitlines()
            hit = next((i for i, ln in enumerate(text) if any(w in ln for w in self.words)), 0)
            if hit > self.read_limit // 2:
                inp["offset"] = hit - 20
        return ("read_file", inp)

    # ---- phases ------------------------------------------------------------------------
    def overview(self) -> list[tuple[str, dict]]:
        pat = self.glob_pattern()
        calls: list[tuple[str, dict]] = [("glob", {"pattern": pat})]
        if "glob" not in self.offered:
            e = self.ext()
            name = f" -name '*.{e}'" if e else ""
            calls = [("bash", {"command": f"find . -type f{name} -not -path '*/.*' | sort | head -200"})]
        elif self.h & 1:
            calls.append(("bash", {"command": "git log --oneline -5" if self.ws.is_git else "ls -la"}))
        return calls

    def reading(self) -> list[tuple[str, dict]]:
        k = 2 + (self.h >> 3) % 2
        picks = self.candidates()[:k]
        calls = [self.read(p) for p in picks]
        kw = self.keyword()
        e = self.ext()
        grep: dict = {"pattern": kw} if kw else {"pattern": {"py": "^class ", "md": "^## "}.get(e, "TODO")}
        if picks and "/" in picks[0]:
            grep["path"] = picks[0].split("/")[0]          # narrow to where the best file lives
        if e:
            grep["glob"] = f"*.{e}"
        calls.append(("grep", grep))
        return calls

    def deeper(self) -> list[tuple[str, dict]]:
        done = [norm_path(c.input.get("path")) for c in self.turn.calls if c.name == "read_file" and c.ok
                and c.input.get("path")]
        calls: list[tuple[str, dict]] = []
        if done:
            if self.ws.is_git and (self.h >> 7) & 1:
                calls.append(("bash", {"command": f"git log --oneline -5 -- {shlex.quote(done[0])}"}))
            else:
                calls.append(("bash", {"command": "wc -l " + " ".join(shlex.quote(p) for p in done)}))
        hits = [h for c in self.turn.calls if c.name == "grep" and c.ok for h in grep_hits(self.ws, c.result)]
        more = [p for p, _, _ in hits if p not in self.read_all]
        more += [p for p in self.candidates() if p not in self.read_all]
        for p in list(dict.fromkeys(more))[:1 + (self.h >> 9) % 2]:
            calls.append(self.read(p))
        return calls

    def folder(self) -> list[tuple[str, dict]]:
        """The next unread files under the folder, in one parallel round (see FOLDER_ROUND)."""
        prefix = self.arg["dir"] + "/"
        room = min(FOLDER_ROUND * self.window, FOLDER_FULL * self.window - self.request_tokens)
        calls: list[tuple[str, dict]] = []
        for path in (f for f in self.ws.files if f.startswith(prefix) and f not in self.read_all):
            call = self.read(path)
            lines = (self.ws.text(path) or "").splitlines()
            start = call[1].get("offset", 0)
            part = lines[start:start + self.read_limit]
            cost = estimate_text("\n".join(part)) + 2 * len(part) + 40    # the tool numbers each line
            if cost > room:
                # the head of the next file, as much as still fits (a careful agent fills up, then stops)
                fit = int((room - 40) * len(part) / max(1, cost - 40))
                if fit >= MIN_PARTIAL_LINES:
                    calls.append(("read_file", {**call[1], "limit": fit}))
                break
            calls.append(call)
            room -= cost
        return calls

    def phases(self) -> list:
        if self.intent == "folder":
            # after a compaction the context was full: answer from what was read (reading on would loop)
            return [] if self.turn.after_compaction else [self.folder] * FOLDER_ROUNDS
        if self.intent == "compact":
            return [] if self.turn.after_compaction else [lambda: [("compact", {"focus": self.arg["focus"]}
                                                                    if self.arg["focus"] else {})]]
        if self.intent == "edit":
            p = self.arg["path"]
            return [lambda: [("read_file", {"path": p})],
                    lambda: [("edit_file", {"path": p, "old_string": self.arg["old"], "new_string": self.arg["new"]})]]
        explore = [self.overview, self.reading, self.deeper][:max(1, self.tool_rounds)]
        if self.turn.after_compaction:
            explore = [self.reading]
        if self.intent == "write":
            explore.append(lambda: [("write_file", {"path": self.arg["path"], "content": self.notes()})])
        return explore

    def notes(self) -> str:
        return file_notes(self.ws, self.turn, self.words)

    def recovery(self) -> list[tuple[str, dict]]:
        """A substitute for each failed call of the last round."""
        out: list[tuple[str, dict]] = []
        for c in self.turn.last_round():
            if not c.is_error:
                continue
            if c.name == "read_file":
                nxt = next((p for p in self.candidates() if p not in self.read_all), None)
                if nxt:
                    out.append(self.read(nxt))
            elif c.name in ("glob", "bash"):
                out.append(("bash", {"command": "ls"}) if c.name == "glob" else ("glob", {"pattern": "*"}))
            elif c.name == "grep":
                kw = self.keyword(1) or "main"
                out.append(("glob", {"pattern": f"**/*{kw}*"}))
            elif c.name == "edit_file":
                out.append(("read_file", {"path": norm_path(c.input.get("path"))}))
        return out

    def usable(self, calls: list[tuple[str, dict]]) -> list[tuple[str, dict]]:
        out: list[tuple[str, dict]] = []
        for name, inp in calls:
            key = (name, canon(inp))
            if name in self.offered and key not in self.tried and key not in {(n, canon(i)) for n, i in out}:
                out.append((name, inp))
        return out

    # ---- the step ---------------------------------------------------------------------
    def next_step(self) -> Step:
        r = self.turn.rounds
        most = FOLDER_ROUNDS if self.intent == "folder" else MAX_ROUNDS
        if r >= most or not self.offered or self.turn.last_message_role == "assistant":
            return Step(compose(self.ws, self.turn, self.words, self.intent, self.arg), [], self.intent)
        calls = self.usable(self.recovery())
        phases = self.phases()
        for p in range(r, len(phases)):
            calls = self.usable(calls + phases[p]())
            if calls:
                break
        if not calls:
            return Step(compose(self.ws, self.turn, self.words, self.intent, self.arg), [], self.intent)
        seen = observations(self.ws, self.turn.last_round(), self.words)
        lead = "First I'll" if r == 0 else _LEADS[(self.h + r) % len(_LEADS)]
        sentence = f"{lead} {plan_sentence(calls)}."
        if r == 0 and self.intent == "explore":
            focus = f" about {', '.join(f'`{w}`' for w in self.words[:3])}" if self.words else ""
            sentence = f"Exploring the workspace to answer your question{focus}. " + sentence
        return Step("\n\n".join(x for x in (seen, sentence) if x), calls, self.intent)
