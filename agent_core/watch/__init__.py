"""`ctxtui watch`'s core: the session state followed from a log."""
