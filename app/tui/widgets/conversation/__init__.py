"""The conversation pane: the `Conversation` container (container.py) and one module per message
widget it holds; a resumed history becomes the same widgets (history.py). Import each from its module."""
