"""The demo's prose: what it says between tool rounds and the final markdown answer.

Built from this turn's calls and their results (file contents come from the workspace, in the
line range the read asked for), so the answer is about what was actually explored.
"""
from __future__ import annotations

from agent_core.providers.demo.conversation import Call, Turn, norm_path
from agent_core.providers.demo.tool_output import first_line, grep_hits, paths_in, target
from agent_core.providers.demo.workspace import LANG, Workspace, definitions, ext_of, excerpt

# The answer summarises what was read and quotes two passages at most: quoting whole files
# (four 50-line excerpts) filled a small window with the answer alone and left turns ending blocked;
# two passages of 30 lines keep the flavour.
EXCERPT_LINES = 30
MAX_EXCERPTS = 2


def _whole(v: object, default: int) -> int:
    """A positive int from a tool input (histories may hold another model's calls)."""
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        return default
    try:
        return max(1, int(v))
    except ValueError:
        return default


def read_range(ws: Workspace, c: Call) -> tuple[int, str]:
    """(first line, text) of the part of the file a read_file call asked for."""
    text = ws.text(norm_path(c.input.get("path"))) or ""
    start = _whole(c.input.get("offset"), 1)
    limit = _whole(c.input.get("limit"), 10**9)
    return start, "\n".join(text.splitlines()[start - 1:start - 1 + limit])


def _names(items: list[str], n: int = 6) -> str:
    shown = ", ".join(f"`{x}`" for x in items[:n])
    return shown + (f" and {len(items) - n} more" if len(items) > n else "")


def _observe_listing(ws: Workspace, c: Call) -> str:
    found = paths_in(ws, c.result)
    if not found:
        return f"`{target(c)}` listed nothing I can read; I'll fall back to the files I can see."
    return f"`{target(c)}` lists {len(found)} files, among them {_names(found, 5)}."


def _observe_read(ws: Workspace, c: Call) -> str:
    path = norm_path(c.input.get("path"))
    start, text = read_range(ws, c)
    defs = definitions(text, ext_of(path))
    n = len(text.splitlines())
    what = f"defines {_names(defs)}" if defs and ext_of(path) != "md" else \
        f"covers {_names(defs, 4)}" if defs else f"starts with “{first_line(text, 80)}”"
    return f"`{path}` ({n} lines from line {start}) {what}."


def _observe_grep(ws: Workspace, c: Call) -> str:
    hits = grep_hits(ws, c.result)
    files = sorted({p for p, _, _ in hits})
    if not hits:
        return f"`{c.input.get('pattern')}` matched nothing readable."
    return f"`{c.input.get('pattern')}` matches {len(hits)} lines in {len(files)} files ({_names(files, 4)})."


def _observe_bash(ws: Workspace, c: Call) -> str:
    if str(c.input.get("command", "")).startswith(("ls", "find")):
        return _observe_listing(ws, c)
    lines = [ln for ln in (c.result or "").splitlines() if ln.strip()]
    return f"`{target(c)}` printed {len(lines)} lines, the first being `{first_line(c.result, 90)}`."


# What the demo says after each tool's result, by tool; any other tool gets a one-line echo.
OBSERVERS = {"glob": _observe_listing, "read_file": _observe_read, "grep": _observe_grep, "bash": _observe_bash}


def observe(ws: Workspace, c: Call, words: list[str]) -> str:
    if c.result is None:
        return ""
    if c.is_error:
        return f"`{c.name}` on `{target(c)}` failed: {first_line(c.result)} — I'll try something else."
    handler = OBSERVERS.get(c.name)
    return handler(ws, c) if handler else f"`{c.name}` done: {first_line(c.result, 100)}"


def observations(ws: Workspace, calls: list[Call], words: list[str]) -> str:
    return "\n".join(f"- {o}" for o in (observe(ws, c, words) for c in calls) if o)


def file_notes(ws: Workspace, turn: Turn, words: list[str]) -> str:
    """Notes the demo writes when asked to save its findings to a file."""
    lines = [f"# Notes: {turn.prompt.splitlines()[0][:80] if turn.prompt else 'workspace'}", ""]
    for c in turn.calls:
        if c.name == "read_file" and c.ok:
            path = norm_path(c.input.get("path"))
            defs = definitions(read_range(ws, c)[1], ext_of(path))
            lines.append(f"- `{path}`: {', '.join(defs) if defs else 'read'}")
    if len(lines) == 2:
        lines.append(f"- {len(ws.files)} files in the workspace")
    return "\n".join(lines) + "\n"


def purpose_line(text: str) -> str:
    """The first sentence of a file's opening docstring or comment, if it has one."""
    lines = text.lstrip().splitlines()
    if not lines:
        return ""
    first = lines[0].strip()
    for mark in ('"""', "'''", "#", "//", "/*"):
        if first.startswith(mark):
            body = first[len(mark):].strip() or (lines[1].strip() if len(lines) > 1 else "")
            body = body.split(". ")[0].rstrip("\"'.*/ ")
            return body[:160] if len(body) > 8 else ""
    return ""


def _title(prompt: str) -> str:
    first = (prompt.splitlines() or ["the workspace"])[0].strip().rstrip("?.!") or "the workspace"
    return first if len(first) <= 70 else first[:69] + "…"


def _reads(calls: list[Call]) -> list[Call]:
    return [c for c in calls if c.name == "read_file" and c.ok]


# ----- the heading, one handler per intent ---------------------------------------------------------
def _compact_head(ws: Workspace, turn: Turn, intent: str, arg: dict) -> list[str]:
    done = any(c.name == "compact" and c.ok for c in turn.calls) or turn.after_compaction
    if not done:
        return ["## Compaction not done", "", "I could not compact the conversation."]
    focus = f" with the focus “{arg.get('focus')}”" if arg.get("focus") else ""
    return ["## Context compacted", "",
            f"The conversation was summarised{focus}; the full transcript stays on disk, and I can keep "
            "working from the summary."]


def _tool_outcome(mine: list[Call], ok: bool) -> list[str]:
    """What the write or edit tool said: its last success, each failure, or that it never ran."""
    out = [f"- {first_line(mine[-1].result)}"] if ok else []
    out += [f"- the tool failed: {first_line(c.result)}" for c in mine if c.is_error]
    return out if mine else ["- the tool was not available"]


def _change_head(ws: Workspace, turn: Turn, intent: str, arg: dict) -> list[str]:
    """A write or an edit: what the tool said, or why nothing changed."""
    mine = [c for c in turn.calls if c.name == ("write_file" if intent == "write" else "edit_file")]
    ok = any(c.ok for c in mine)
    path = arg.get("path", "")
    verb = "Wrote" if intent == "write" else "Edited"
    out = [f"## {verb} `{path}`" if ok else f"## Could not {intent} `{path}`", "", *_tool_outcome(mine, ok)]
    if intent == "edit":
        out += ["", f"Replaced `{arg.get('old', '')[:60]}` with `{arg.get('new', '')[:60]}`." if ok else
                "Nothing was changed."]
    return out


def _explore_head(ws: Workspace, turn: Turn, intent: str, arg: dict) -> list[str]:
    """Any other intent: the prompt as a title and what was explored (a glance at the workspace
    when no tool ran)."""
    calls = turn.calls
    errors = [c for c in calls if c.is_error]
    n_rounds = len({c.round for c in calls})
    failed = f"; {len(errors)} {'call' if len(errors) == 1 else 'calls'} failed." if errors else "."
    out = [f"## {_title(turn.prompt)}", "",
           f"I explored the workspace for this request with {len(calls)} tool calls over {n_rounds} "
           f"rounds and read {len(_reads(calls))} files" + failed]
    if not calls:
        files = ws.files
        top = sorted({f.split('/')[0] for f in files})
        out += ["", "No tools were available, so this comes from a quick look at the workspace:", "",
                f"- {len(files)} files; top level: {_names(top, 10)}"]
    return out


HEADS = {"compact": _compact_head, "write": _change_head, "edit": _change_head}


# ----- the sections after it -------------------------------------------------------------------------
def _files_examined(ws: Workspace, reads: list[Call]) -> list[str]:
    if not reads:
        return []
    out = ["", "### Files examined", ""]
    for c in reads:
        path = norm_path(c.input.get("path"))
        text = read_range(ws, c)[1]
        defs = definitions(text, ext_of(path))
        label = "sections" if ext_of(path) == "md" else "defines"
        out.append(f"- `{path}` — {ws.line_count(path)} lines" + (f"; {label} {_names(defs, 8)}" if defs else ""))
        gist = purpose_line(text)
        if gist:
            out.append(f"  - {gist}")
    return out


def _grep_section(ws: Workspace, calls: list[Call]) -> list[str]:
    greps = [c for c in calls if c.name == "grep" and c.ok]
    hits = [h for c in greps for h in grep_hits(ws, c.result)]
    if not hits:
        return []
    out = ["", f"### Where `{greps[0].input.get('pattern')}` appears", ""]
    out += [f"- `{p}:{n}` — {t[:100]}" for p, n, t in hits[:8]]
    if len(hits) > 8:
        out.append(f"- … and {len(hits) - 8} more matches")
    return out


def _commands(calls: list[Call]) -> list[str]:
    cmds = [c for c in calls if c.name == "bash" and c.ok]
    if not cmds:
        return []
    out = ["", "### Commands", ""]
    for c in cmds:
        lines = [ln.rstrip() for ln in (c.result or "").splitlines() if ln.strip()][:4]
        out.append(f"- `{c.input.get('command')}`" + (":" if lines else " (no output)"))
        out += [f"  - `{ln[:100]}`" for ln in lines]
    return out


def _problems(calls: list[Call]) -> list[str]:
    errors = [c for c in calls if c.is_error]
    if not errors:
        return []
    return ["", "### Problems along the way", "",
            *(f"- `{c.name}` on `{target(c)}`: {first_line(c.result)}" for c in errors)]


def _key_passages(ws: Workspace, reads: list[Call], words: list[str]) -> list[str]:
    if not reads:
        return []
    out = ["", "### Key passage"]
    for c in reads[:MAX_EXCERPTS]:
        path = norm_path(c.input.get("path"))
        start, text = read_range(ws, c)
        first, lines = excerpt(text, words, EXCERPT_LINES)
        if lines:
            a = start + first - 1
            out += ["", f"`{path}`, lines {a}–{a + len(lines) - 1}:", "",
                    f"```{LANG.get(ext_of(path), '')}", *lines, "```"]
    return out


def _next_steps(ws: Workspace, turn: Turn, reads: list[Call], words: list[str]) -> list[str]:
    seen = {norm_path(c.input.get('path')) for c in reads} | turn.read_before
    unread = ws.rank([f for f in ws.files if f not in seen], words, turn.prompt)[:2]
    steps = [f"Read `{p}` next." for p in unread]
    steps.append("Ask me to search for a specific name, or to write these notes to a file.")
    return ["", "### Next steps", "", *(f"{i}. {s}" for i, s in enumerate(steps, 1))]


def compose(ws: Workspace, turn: Turn, words: list[str], intent: str, arg: dict) -> str:
    """The final markdown answer: a heading for the intent, then what was read, found, run and
    what failed; an exploration also quotes key passages and suggests next steps."""
    reads = _reads(turn.calls)
    out = HEADS.get(intent, _explore_head)(ws, turn, intent, arg)
    out += _files_examined(ws, reads) + _grep_section(ws, turn.calls) + _commands(turn.calls) + _problems(turn.calls)
    if intent == "explore":
        out += _key_passages(ws, reads, words) + _next_steps(ws, turn, reads, words)
    return "\n".join(out).strip() + "\n"
