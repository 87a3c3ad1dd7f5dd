"""`ctxtui watch` as an app: one WatchScreen (app/watch/screen.py), with the watch stylesheets and theme."""
from __future__ import annotations

from pathlib import Path

from textual.app import App

from app.stylesheets import stylesheets
from agent_core.watch.target import WatchTarget

from app.watch.screen import WatchScreen

CSS_FILES = ("panes.tcss", "watch.tcss")


class WatchApp(App[int]):
    """`ctxtui watch` as an app: one WatchScreen."""

    TITLE = "ctxtui watch"
    CSS_PATH = stylesheets(*CSS_FILES)

    def __init__(self, target: WatchTarget, *, context_window: int | None = None, force_polling: bool = False,
                 live: bool = True, cwd: Path | None = None, theme: str | None = None) -> None:
        super().__init__()
        self.watch_target = target
        self.context_window, self.force_polling, self.live, self.cwd = context_window, force_polling, live, cwd
        self.theme_name = theme

    def get_default_screen(self) -> WatchScreen:
        return WatchScreen(self.watch_target, context_window=self.context_window, force_polling=self.force_polling,
                           live=self.live, cwd=self.cwd)

    @property
    def watch_screen(self) -> WatchScreen:
        screen = self.screen_stack[0]
        assert isinstance(screen, WatchScreen)
        return screen

    def on_mount(self) -> None:
        if self.theme_name:
            self.theme = self.theme_name
