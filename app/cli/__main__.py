"""`python -m app.cli` is `ctxtui`. ctxtui's other top-level packages (agent_core, compaction, styles)
load from beside this `app`, not from a same-named folder in the current one (app/cli/launcher.py).
A current folder with its own app/ package runs that package instead: use the `ctxtui` command there."""
import sys
from pathlib import Path

try:
    # installed: the wheel's copy of app/cli/launcher.py (mypy checks it there, as app.cli.launcher)
    from ctxtui_launcher import own_packages_first  # type: ignore[import-untyped,import-not-found,unused-ignore]
except ImportError:
    from app.cli.launcher import own_packages_first   # a checkout that was never installed

own_packages_first(str(Path(__file__).resolve().parents[2]))

from app.cli.main import main  # noqa: E402  (after the packages are mapped)

sys.exit(main())
