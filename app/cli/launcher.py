"""Start-up guard for the `ctxtui` command: ctxtui's own top-level packages (app, agent_core,
compaction, styles) load from where ctxtui is installed, even when another folder on sys.path holds
packages of the same names (PYTHONPATH=., an empty PYTHONPATH entry, `python -m` run in a project
with its own app/ or styles/).

The wheel installs this file as the top-level module `ctxtui_launcher` (pyproject.toml,
[tool.hatch.build.targets.wheel.force-include]), which the console script imports, so the script
starts without importing `app` by name first; a checkout has it here. Standard library only."""
from __future__ import annotations

import sys
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec, PathFinder
from pathlib import Path

PACKAGES = ("app", "agent_core", "compaction", "styles")
FIX = ("run ctxtui from another folder, or remove that folder from PYTHONPATH "
       "(an empty entry, as in PYTHONPATH=:/x, means the current folder)")


class OwnPackages(MetaPathFinder):
    """Finds ctxtui's top-level packages in `home` only; their submodules follow the package's own
    __path__, so the whole tree comes from `home`. Every other name is left to the usual finders."""

    def __init__(self, home: str) -> None:
        self.home = home

    def find_spec(self, fullname: str, path=None, target=None) -> ModuleSpec | None:
        if fullname in PACKAGES:
            return PathFinder.find_spec(fullname, [self.home])
        return None


def is_home(entry: str) -> bool:
    """A sys.path entry holding ctxtui's packages (a site-packages folder, or a checkout)."""
    root = Path(entry or ".")
    return (root / "app" / "cli" / "main.py").is_file() and all(
        (root / name / "__init__.py").is_file() for name in PACKAGES)


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
    home = str(Path(home or ".").resolve())
    if not any(isinstance(f, OwnPackages) for f in sys.meta_path):
        sys.meta_path.insert(0, OwnPackages(home))
    return home


def main() -> int:
    """The console script: map the packages, then run the dispatcher. If they still cannot load
    (no entry on sys.path holds them all), say which folder shadows them and how to fix it: exit 2."""
    own_packages_first()
    try:
        from app.cli.main import main as ctxtui_main  # noqa: PLC0415  (only after the packages are mapped)
    except ImportError as e:
        shadow = ", ".join(f"{name} from {loc}" for name in PACKAGES if (loc := where(name)))
        print(f"ctxtui: cannot load its own packages ({e}); found {shadow or 'none of them'}.\n"
              f"Another folder with packages of the same names comes first on sys.path: {FIX}.",
              file=sys.stderr)
        return 2
    return ctxtui_main()


if __name__ == "__main__":
    sys.exit(main())
