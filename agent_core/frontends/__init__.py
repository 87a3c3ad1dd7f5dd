"""Front-ends that never load Textual: headless runs and usage reports."""
