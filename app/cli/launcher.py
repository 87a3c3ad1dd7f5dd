"""Start-up guard for the `ctxtui` command: ctxtui's own top-level packages (app, agent_core,
compaction, styles) load from where ctxtui is installed, even when another folder on sys.path holds
packages of the same names (PYTHONPATH=., an empty PYTHONPATH entry, `python -m` run in a project
with its own app/ or styles/).

The wheel installs this file as the top-level module `ctxtui_launcher` (pyproject.toml,
[tool.hatch.build.targets.wheel.force-include]), which the console script imports, so the script
starts without importing `app` by name first; a checkout has it here. Standard library only, and
nothing heavy (os, sys, importlib.machinery): `ctxtui statusline`
runs on every refresh of Claude Code's prompt, and `importlib.abc` (which loads importlib.resources,
pathlib, tempfile and zipfile) was 30 ms of its start. That command and `ctxtui usage` (run again
and again over logs it has mostly read already) go straight to their modules, without the
dispatcher's argument parser and process guard: they read no key and run no tool."""
from __future__ import annotations

import os
import sys
from importlib.machinery import ModuleSpec, PathFinder

TYPE_CHECKING = False    # typing stays unloaded at run time (the status line's start)
if TYPE_CHECKING:
    from typing import Callable, Sequence

PACKAGES = ("app", "agent_core", "compaction", "styles")
FIX = ("run ctxtui from another folder, or remove that folder from PYTHONPATH "
       "(an empty entry, as in PYTHONPATH=:/x, means the current folder)")


class OwnPackages:
    """Finds ctxtui's top-level packages in `home` only; their submodules follow the package's own
    __path__, so the whole tree comes from `home`. Every other name is left to the usual finders.
    (A meta path finder is any object with `find_spec`: no importlib.abc base is needed.)"""

    def __init__(self, home: str) -> None:
        self.home = home

    def find_spec(self, fullname: str, path: Sequence[str] | None = None, target: object = None) -> ModuleSpec | None:
        if fullname in PACKAGES:
            return PathFinder.find_spec(fullname, [self.home])
        return None


def is_home(entry: str) -> bool:
    """A sys.path entry holding ctxtui's packages (a site-packages folder, or a checkout)."""
    root = entry or "."
    return os.path.isfile(os.path.join(root, "app", "cli", "main.py")) and all(
        os.path.isfile(os.path.join(root, name, "__init__.py")) for name in PACKAGES)


def where(name: str) -> str | None:
    """The file or folder `import name` would load now, without importing it."""
    spec = PathFinder.find_spec(name)
    if spec is None:
        return None
    if spec.origin and spec.origin != "namespace":
        return spec.origin
    return next(iter(spec.submodule_search_locations or []), None)


def own_packages_first(home: str | None = None) -> str | None:
    """Map PACKAGES to `home` (default: the first sys.path entry that holds all of them); returns
    home, or None when no entry does (nothing is changed then)."""
    home = home or next((entry for entry in sys.path if is_home(entry)), None)
    if home is None:
        return None
    home = os.path.realpath(home or ".")
    if not any(isinstance(f, OwnPackages) for f in sys.meta_path):
        sys.meta_path.insert(0, OwnPackages(home))
    return home


def main() -> int:
    """The console script: map the packages, then run the dispatcher (or a fast command's own
    module). If they still cannot load (no entry on sys.path holds them all), say which folder
    shadows them and how to fix it: exit 2."""
    own_packages_first()
    command = sys.argv[1] if len(sys.argv) > 1 else None
    fast_main: Callable[[Sequence[str]], int] | None = None
    try:
        if command == "statusline":         # run by their own modules, without the dispatcher
            from app.cli.statusline import main as fast_main  # noqa: PLC0415  (after the mapping)
        elif command == "usage":
            from app.cli.usage import main as fast_main  # noqa: PLC0415  (after the mapping)
        else:
            from app.cli.main import main as ctxtui_main  # noqa: PLC0415  (only after the packages are mapped)
    except ImportError as e:
        shadow = ", ".join(f"{name} from {loc}" for name in PACKAGES if (loc := where(name)))
        print(f"ctxtui: cannot load its own packages ({e}); found {shadow or 'none of them'}.\n"
              f"Another folder with packages of the same names comes first on sys.path: {FIX}.",
              file=sys.stderr)
        return 2
    if fast_main is not None:
        return fast_main(sys.argv[2:])
    return ctxtui_main()


if __name__ == "__main__":
    sys.exit(main())
