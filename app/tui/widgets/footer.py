"""Textual's Footer, without its leak and its busy work over a long session.

The Footer recomposes its keys whenever the screen says its bindings changed: a turn starting and
ending (Esc greyed out and back), but also every focus move and mount, about six times a demo turn,
each time a dozen new widgets styled and laid out. Here it recomposes only when the keys it shows
(key, action, description, tooltip) change; when only whether a key is enabled changes (Esc at the
start and end of every turn), the shown key is greyed or lit in place.

Each new FooterKey is bound to the footer's `compact` with `data_bind`, and Textual drops the
watchers of removed keys only when `compact` next changes, which it never does here: every
recompose left its dead FooterKeys (and their styles) alive, about 0.3 MB a turn. After each
recompose the footer's `compact` is marked mutated (`mutate_reactive`), which makes Textual prune
the watchers of removed keys (and sets the live ones to the value they already have)."""
from __future__ import annotations

from typing import Hashable

from textual.screen import Screen
from textual.widgets import Footer
from textual.widgets._footer import FooterKey


def _keys(screen: Screen) -> tuple[tuple[Hashable, ...], dict[str, bool]]:
    """What the footer shows for `screen`: its keys, and whether each action is enabled."""
    shown = [(binding, enabled, tooltip)
             for (_, binding, enabled, tooltip) in screen.active_bindings.values() if binding.show]
    keys = tuple((b.key, b.action, b.description, tooltip) for b, _, tooltip in shown)
    return keys, {b.action: enabled for b, enabled, _ in shown}


class AppFooter(Footer):
    _shown: Hashable = None

    def bindings_changed(self, screen: Screen) -> None:
        if self.is_attached and screen is self.screen and self._shown is not None:
            keys, enabled = _keys(screen)
            if (self.compact, keys) == self._shown and self._relight(enabled):
                return
        super().bindings_changed(screen)

    def _relight(self, enabled: dict[str, bool]) -> bool:
        """Grey or light the shown keys in place; False when a key is not as Textual draws it
        (then the footer recomposes)."""
        for key in self.query(FooterKey):
            if not hasattr(key, "_disabled"):
                return False
            if key.action not in enabled:
                continue
            disabled = not enabled[key.action]
            if key._disabled != disabled:
                key._disabled = disabled
                key.set_class(disabled, "-disabled")
        return True

    async def recompose(self) -> None:
        self._shown = (self.compact, _keys(self.screen)[0]) if self.is_attached else None
        await super().recompose()
        self.mutate_reactive(Footer.compact)
