"""Widgets of the TUI's main screen; each renders state handed to it by the app."""
