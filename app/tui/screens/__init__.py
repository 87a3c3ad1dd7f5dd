"""Screens the TUI pushes over its main screen."""
