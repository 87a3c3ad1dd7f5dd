"""A compaction preview in words: what each layer would do, the tokens before and after, and what
the next call would pay and every later one save. Shared by the TUI's preview screen and headless
text output; the layers' own words are the engine's, file names in them someone else's: made visible."""
from __future__ import annotations

from agent_core.loop.compaction_preview import CompactionPreview, PreviewStep
from agent_core.security.visible_text import visible
from compaction.cache_economics import reread_clause

from app import format as fmt


def headline(p: CompactionPreview) -> str:
    if not p.acts:
        return f"Compaction preview: nothing would change. {visible(p.note)}"
    return (f"Compaction preview: {fmt.tokens(p.tokens_before)} → {fmt.tokens(p.tokens_after)} tokens, "
            f"frees {fmt.tokens(max(0, p.tokens_before - p.tokens_after))}. Nothing has changed yet.")


def step_line(s: PreviewStep) -> str:
    if not s.acted:
        return f"{s.layer}: would not act. {visible(s.action)}"
    what = []
    if s.removed:
        entries = "entry" if s.removed == 1 else "entries"
        what.append(f"removes {s.removed:,} {entries} ({fmt.tokens(s.removed_tokens)} tokens)")
    if s.cleared:
        b, a = s.cleared_tokens
        what.append(f"clears {s.cleared:,} in place ({fmt.tokens(b)} → {fmt.tokens(a)} tokens)")
    tail = f" · {', '.join(what)}" if what else ""
    return (f"{s.layer}: {fmt.tokens(s.tokens_before)} → {fmt.tokens(s.tokens_after)} tokens{tail}. "
            f"{visible(s.action)}")


def money_lines(p: CompactionPreview) -> list[str]:
    """The summary's assumed size and call, the next call's extra dollars, the saving, the payback,
    and the re-reads the engine expects it to cause, when it priced any."""
    out: list[str] = []
    if p.summary_tokens is not None:
        out.append(f"summary: about {fmt.tokens(p.summary_tokens)} tokens ({visible(p.summary_source)}); "
                   f"its call {fmt.usd(p.summary_usd)}")
    if not p.acts:
        return out
    if p.cold:
        out.append("cache: cold, so nothing cached is written again")
    else:
        out.append(f"cache: the next call writes {fmt.tokens(p.rewrite_tokens)} tokens it would have read")
    if p.next_call_usd is None:
        out.append("dollars: not known (this model's prices are not known)")
        return out + rereads_line(p)
    saves = p.saves_per_call_usd or 0.0
    if p.payback_calls is None:
        payback = "never pays back (no later call reads less)"
    elif p.payback_calls <= 0:
        payback = "pays at once"
    else:
        payback = f"pays back in {p.payback_calls:,.1f} calls"
    out.append(f"next call: {fmt.signed_usd(p.next_call_usd)} (summary call included) · each later call saves "
               f"{fmt.usd(saves)} · {payback}")
    return out + rereads_line(p)


def rereads_line(p: CompactionPreview) -> list[str]:
    """["re-reads expected $0.026 (8.9k tokens of results)"] when the engine priced re-reads for
    this compaction (the wording is the engine's, as the inspector and the loss report say it)."""
    return [reread_clause(p.reread_usd, p.reread_tokens)] if p.acts and p.reread_tokens > 0 else []


def preview_lines(p: CompactionPreview) -> list[str]:
    """Everything the preview says, one line each."""
    lines = [headline(p)]
    lines += [f"  {step_line(s)}" for s in p.steps]
    lines += money_lines(p)
    return lines
