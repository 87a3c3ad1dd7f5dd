"""@-mentions: `@path` in a prompt attaches that workspace file to the user message. The file list
the TUI's picker offers (`workspace_files`), finding and quoting mentions in a prompt
(`mention_text`), and the confined, size-capped attachment (`attach`)."""
