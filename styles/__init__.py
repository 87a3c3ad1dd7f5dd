"""The Textual stylesheets, one `.tcss` per screen, shipped as package data (read through
`app/stylesheets.py`, so a wheel install finds them)."""
