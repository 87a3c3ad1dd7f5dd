"""What the reading front-ends compute from logs: usage totals and watch state."""
