"""The demo's answers to summary requests: an extractive summary in the
nine sections of compaction/summary_prompt.py for purpose="compaction", and a short notes
update for purpose="memory".

Extractive means nothing is invented: prompts are quoted, paths and commands come from the tool
calls, errors from is_error results, current work from the last assistant text. Items are cut
shorter until the result is well under the size of what it summarises.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from compaction.accounting.tokens import estimate_message, estimate_text

from agent_core.providers.demo.conversation import (blocks, canon, is_prompt_text, looks_like_summary, norm_path,
                                                    result_text)
from agent_core.providers.demo.workspace import definitions, ext_of, strip_line_numbers

SECTIONS = ("Primary Request and Intent", "Key Technical Concepts", "Files and Code Sections",
            "Errors and Fixes", "Problem Solving", "All User Messages", "Pending Tasks", "Current Work",
            "Optional Next Step")
_FOCUS = re.compile(r"(?:additional instructions|focus)[^:\n]*:\s*(.+)", re.I)
_ACTIONS = {"read_file": "read", "write_file": "written", "edit_file": "edited"}


def _cut(s: str, n: int) -> str:
    s = " ".join(s.split())
    return s if len(s) <= n else s[:n - 1] + "…"


@dataclass
class Facts:
    prompts: list[str] = field(default_factory=list)
    carried: list[str] = field(default_factory=list)     # user messages quoted by an earlier summary
    files: dict[str, list[str]] = field(default_factory=dict)
    commands: list[tuple[str, str]] = field(default_factory=list)
    searches: list[str] = field(default_factory=list)
    errors: list[tuple[str, str, str, str]] = field(default_factory=list)   # tool, target, error, what came next
    concepts: list[str] = field(default_factory=list)
    tools: Counter = field(default_factory=Counter)
    last_text: str = ""
    pending_calls: list[str] = field(default_factory=list)
    answered_last_prompt: bool = False
    focus: str = ""


def _carried(text: str) -> list[str]:
    """Bullets of the 'All User Messages' section of an earlier summary."""
    out, inside = [], False
    for line in text.splitlines():
        s = line.strip()
        if "all user messages" in s.lower():
            inside = True
            continue
        if inside:
            if re.match(r"^(\d+\.|#|</summary>)", s):
                break
            if s.startswith("- "):
                out.append(s[2:].strip().strip('"'))
    return out


def split_instruction(messages: list[dict]) -> tuple[list[dict], str]:
    """The conversation to summarise and the summary instruction (the final text asking for it)."""
    if not messages or messages[-1].get("role") != "user":
        return messages, ""
    bs = blocks(messages[-1])
    texts = [i for i, b in enumerate(bs) if b.get("type") == "text"]
    if not texts or "summar" not in bs[texts[-1]].get("text", "").lower():
        return messages, ""
    instruction = bs[texts[-1]]["text"]
    rest = [b for i, b in enumerate(bs) if i != texts[-1]]
    convo = messages[:-1] + ([{"role": "user", "content": rest}] if rest else [])
    return (convo or messages), instruction


def gather(messages: list[dict], instruction: str = "") -> Facts:
    f = Facts()
    m = _FOCUS.search(instruction or "")
    f.focus = _cut(m.group(1), 200) if m else ""
    calls: dict[str, tuple[str, dict]] = {}
    pending: dict[str, str] = {}
    last_prompt_at, last_answer_at = -1, -1
    for i, msg in enumerate(messages):
        for b in blocks(msg):
            t = b.get("type")
            if msg.get("role") == "assistant":
                if t == "text" and b.get("text", "").strip():
                    f.last_text = b["text"]
                    last_answer_at = i
                elif t == "tool_use":
                    name, inp = str(b.get("name")), dict(b.get("input") or {})
                    calls[str(b.get("id"))] = (name, inp)
                    pending[str(b.get("id"))] = f"{name} {_cut(canon(inp), 80)}"
                    f.tools[name] += 1
                    if name in _ACTIONS and inp.get("path"):
                        acts = f.files.setdefault(norm_path(inp["path"]), [])
                        if _ACTIONS[name] not in acts:
                            acts.append(_ACTIONS[name])
                    elif name == "grep":
                        f.searches.append(str(inp.get("pattern")))
                    elif name == "glob":
                        f.searches.append(f"files {inp.get('pattern')}")
            elif t == "tool_result":
                tid = str(b.get("tool_use_id"))
                pending.pop(tid, None)
                name, inp = calls.get(tid, ("tool", {}))
                text = result_text(b)
                if b.get("is_error"):
                    f.errors.append((name, str(inp.get("path") or inp.get("pattern") or inp.get("command") or name),
                                     text, ""))
                elif name == "bash":
                    f.commands.append((str(inp.get("command")), text))
                elif name == "read_file":
                    for d in definitions(strip_line_numbers(text), ext_of(str(inp.get("path", "")))):
                        if d not in f.concepts and not d.startswith("_"):
                            f.concepts.append(d)
            elif t == "text":
                txt = b.get("text", "")
                if looks_like_summary(txt):
                    f.carried += [c for c in _carried(txt) if c not in f.carried]
                elif is_prompt_text(txt) and not any(x.get("type") == "tool_result" for x in blocks(msg)):
                    f.prompts.append(txt.strip())
                    last_prompt_at = i
    # what followed each error: the next call made after it
    ordered = list(calls.values())
    fixed = []
    for name, tgt, err, _ in f.errors:
        idx = next((k for k, (n, inp) in enumerate(ordered) if n == name and tgt in canon(inp)), None)
        nxt = ordered[idx + 1] if idx is not None and idx + 1 < len(ordered) else None
        fixed.append((name, tgt, err, f"then {nxt[0]} {_cut(canon(nxt[1]), 60)}" if nxt else "not retried"))
    f.errors = fixed
    f.pending_calls = list(pending.values())
    f.answered_last_prompt = last_answer_at > last_prompt_at and not pending
    return f


def _first(text: str) -> str:
    return next((ln for ln in text.splitlines() if ln.strip()), "(no output)")


def _cleared(text: str) -> bool:
    """A result a compaction layer already replaced (placeholder or persisted preview)."""
    s = text.lstrip()
    return s.startswith("[Old result of") or s.startswith("<persisted-output>")


def _gist(text: str) -> str:
    """The first few lines of a message, markdown marks dropped."""
    lines = [ln.strip().lstrip("#").strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("```")]
    return " — ".join(lines[:3])


def _bullets(items: list[str], n: int, width: int, empty: str) -> list[str]:
    if not items:
        return [f"   - {empty}"]
    shown = items[-n:]
    out = [f"   - {_cut(x, width)}" for x in shown]
    if len(items) > n:
        out.insert(0, f"   - ({len(items) - n} earlier items omitted)")
    return out


def render(f: Facts, n: int, width: int, user_n: int = 30, user_width: int = 400) -> str:
    users = f.carried + f.prompts
    primary = users[-1] if users else "(no user request found)"
    first = users[0] if len(users) > 1 else ""
    analysis = [
        "<analysis>",
        f"Messages span {len(users)} user requests and {sum(f.tools.values())} tool calls "
        f"({', '.join(f'{k} ×{v}' for k, v in sorted(f.tools.items())) or 'none'}).",
        f"{len(f.files)} files touched, {len(f.commands)} commands run, {len(f.errors)} errors.",
        "Latest request " + ("answered." if f.answered_last_prompt else "still in progress."),
    ]
    if f.focus:
        analysis.append(f"Requested focus: {f.focus}")
    analysis.append("</analysis>")
    files = [f"`{p}` ({', '.join(a)})" for p, a in f.files.items()]
    cmds = [f"`{_cut(c, width // 2)}`" + (f" → {_cut(_first(o), width // 2)}" if not _cleared(o) else "")
            for c, o in f.commands]
    errs = [f"{name} on `{_cut(t, 60)}`: {_cut(e, width // 2)} ({nx})" for name, t, e, nx in f.errors]
    solving = cmds + [f"searched {s}" for s in dict.fromkeys(f.searches)]
    pending = [f"answer: {_cut(primary, width)}"] if not f.answered_last_prompt else []
    pending += [f"unanswered tool call: {p}" for p in f.pending_calls]
    concepts = ([f"focus: {f.focus}"] if f.focus else []) + [f"`{c}`" for c in f.concepts[:n * 2]]
    nxt = (f"Continue with the latest request: {_cut(primary, width)}" if not f.answered_last_prompt
           else "Wait for the user's next request; nothing was left open.")
    body = {
        SECTIONS[0]: [f"   Latest: {_cut(primary, width)}"] + ([f"   First: {_cut(first, width)}"] if first else []),
        SECTIONS[1]: [f"   - {', '.join(concepts)}"] if concepts else ["   - (none recorded)"],
        SECTIONS[2]: _bullets(files, n * 2, width, "(no files)"),
        SECTIONS[3]: _bullets(errs, n, width, "(no errors)"),
        SECTIONS[4]: _bullets(solving, n, width, "(no commands or searches)"),
        SECTIONS[5]: _bullets([f'"{u}"' for u in users], user_n, user_width, "(none)"),
        SECTIONS[6]: _bullets(pending, n, width, "none"),
        SECTIONS[7]: [f"   {_cut(_gist(f.last_text), width) if f.last_text else '(no assistant text yet)'}"],
        SECTIONS[8]: [f"   {nxt}"],
    }
    out = analysis + ["", "<summary>"]
    for k, name in enumerate(SECTIONS, 1):
        out += [f"{k}. {name}:", *body[name], ""]
    out.append("</summary>")
    return "\n".join(out) + "\n"


def summarize(messages: list[dict], max_tokens: int) -> str:
    """Nine sections, shrunk until at most a quarter of the input (and within max_tokens)."""
    convo, instruction = split_instruction(messages)
    facts = gather(convo, instruction)
    source = sum(estimate_message(m) for m in convo)
    budget = max(120, min(max_tokens - 16, source // 4))
    text = ""
    # user messages are cut last: they carry the intent (as Codex keeps them verbatim)
    ladder = [(n, w, 30, 400) for n, w in ((12, 400), (8, 240), (6, 160), (4, 100), (3, 60), (2, 40), (1, 30))]
    ladder += [(1, 30, un, uw) for un, uw in ((20, 240), (12, 160), (8, 100), (4, 60), (2, 40))]
    for n, width, user_n, user_width in ladder:
        text = render(facts, n, width, user_n, user_width)
        if estimate_text(text) <= budget:
            break
    return text


def memory_notes(messages: list[dict], max_tokens: int) -> str:
    """A short notes update (session memory): requests, files, commands, errors, current state."""
    f = gather(messages)
    lines = ["# Session notes", "", "## Requests", *[f"- {_cut(p, 160)}" for p in (f.carried + f.prompts)[-5:]]]
    if f.files:
        lines += ["", "## Files", *[f"- `{p}` ({', '.join(a)})" for p, a in list(f.files.items())[-10:]]]
    if f.commands:
        lines += ["", "## Commands",
                  *[f"- `{_cut(c, 80)}`" + ("" if _cleared(o) else f" → {_cut(_first(o), 60)}")
                    for c, o in f.commands[-5:]]]
    if f.errors:
        lines += ["", "## Errors", *[f"- {n} `{_cut(t, 60)}`: {_cut(e, 80)}" for n, t, e, _ in f.errors[-5:]]]
    lines += ["", "## Current state", f"- {_cut(_gist(f.last_text), 200) if f.last_text else 'starting'}"]
    text = "\n".join(lines) + "\n"
    limit = max(40, max_tokens - 8) * 4
    return text if len(text) <= limit else text[:limit].rsplit("\n", 1)[0] + "\n"
