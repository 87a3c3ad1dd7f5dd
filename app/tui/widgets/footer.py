"""Textual's Footer, without its leak over a long session.

The Footer recomposes its keys whenever the bindings change (a turn starting and ending greys Esc
out and back), and each new FooterKey is bound to the footer's `compact` with `data_bind`. Textual
drops the watchers of removed keys only when `compact` next changes, which it never does here: every
turn left fourteen dead FooterKeys (and their styles) alive, about 0.3 MB a turn. After each
recompose the footer's `compact` is marked mutated (`mutate_reactive`), which makes Textual prune
the watchers of removed keys (and sets the live ones to the value they already have)."""
from __future__ import annotations

from textual.widgets import Footer


class AppFooter(Footer):
    async def recompose(self) -> None:
        await super().recompose()
        self.mutate_reactive(Footer.compact)
