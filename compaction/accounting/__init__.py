"""Counting against the window: the budget and its thresholds, the token count, the prompt-cache model."""
