"""`ctxtui statusline`: one line for Claude Code's statusLine setting."""
