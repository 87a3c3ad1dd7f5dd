"""Widgets of the main screen; each renders state handed to it by the app."""
