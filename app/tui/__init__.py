"""The Textual TUI: the app, its slash commands, screens and widgets."""
