"""`python -m app.cli` is `ctxtui`."""
import sys

from app.cli.main import main

sys.exit(main())
