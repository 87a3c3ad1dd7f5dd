"""ctxtui's own credentials: the variables that hold them are scrubbed from everything written
and kept out of the environment of every command the model runs."""

SECRET_ENV_VARS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
