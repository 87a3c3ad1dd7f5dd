"""`ctxtui watch`'s screen: the TUI's panes over a session log, live."""
