"""The wheel as a user installs it (pipx install / uv tool install): built from this checkout,
installed in a clean venv, run from a project folder that holds its own `app/` package and
`styles/` folder. No network: hatchling builds without isolation, and the clean venv takes its
dependencies from this venv through a .pth file instead of an index."""
from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from agent_core.version import __version__

ROOT = Path(__file__).resolve().parents[2]
LAUNCHER = ROOT / "app" / "cli" / "launcher.py"
VERSION = __version__   # the one source: hatch reads it from agent_core/version.py (pyproject says dynamic)


def project_with_its_own_app(root: Path) -> Path:
    """A user's project whose top-level names are ctxtui's: app/ (with app/cli.py) and styles/.
    Importing its app leaves app/IMPORTED behind."""
    (root / "app").mkdir(parents=True)
    (root / "app" / "__init__.py").write_text("import pathlib\npathlib.Path(__file__).with_name('IMPORTED').touch()\n")
    (root / "app" / "cli.py").write_text("def main():\n    return 'the project cli'\n")
    (root / "styles").mkdir()
    (root / "styles" / "__init__.py").write_text("")
    (root / "styles" / "app.tcss").write_text("Screen { background: red; }\n")
    return root


def user_env(tmp: Path, **extra: str) -> dict[str, str]:
    """The environment without the key or a PYTHONPATH, its state and config folders in `tmp`."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL",
                        "CTXTUI_CONFIG", "CTXTUI_MODEL", "VIRTUAL_ENV")}
    env.update(HOME=str(tmp / "home"), CTXTUI_HOME=str(tmp / "state" / "ctxtui"), XDG_STATE_HOME=str(tmp / "state"),
               XDG_CONFIG_HOME=str(tmp / "config"), NO_COLOR="1", **extra)
    return env


def run(argv, cwd: Path, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The clean venv's bin folder, with the freshly built wheel installed in it."""
    tmp = tmp_path_factory.mktemp("wheel")
    env = user_env(tmp, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
    built = run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                 "-w", tmp / "dist", ROOT], tmp, env, timeout=300)
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    (wheel,) = (tmp / "dist").glob("ctxtui-*.whl")

    clean = tmp / "clean"
    made = run([sys.executable, "-m", "venv", "--without-pip", clean], tmp, env)
    assert made.returncode == 0, made.stderr
    python = clean / "bin" / "python"
    purelib = run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], tmp, env).stdout.strip()
    # the dependencies (textual, anthropic, ...) from this venv; ctxtui itself only from the wheel
    deps = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}
    Path(purelib, "project_deps.pth").write_text("".join(f"{d}\n" for d in sorted(deps)))
    done = run([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index",
                "--ignore-installed", wheel], tmp, env, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return clean / "bin"


@pytest.mark.slow
@pytest.mark.parametrize("pythonpath", [None, ".", ":"], ids=["plain", "PYTHONPATH=.", "empty-entry"])
def test_the_installed_command_runs_from_a_project_with_its_own_app_package(installed, tmp_path, pythonpath):
    project = project_with_its_own_app(tmp_path / "project")
    env = user_env(tmp_path, **({"PYTHONPATH": pythonpath} if pythonpath else {}))

    version = run([installed / "ctxtui", "--version"], project, env)
    assert (version.returncode, version.stdout.strip()) == (0, f"ctxtui {VERSION}"), version.stderr

    answer = run([installed / "ctxtui", "--headless", "-p", "hello", "--model", "demo"], project, env)
    assert answer.returncode == 0, answer.stderr[-3000:]
    assert answer.stdout.strip() and "[done]" in answer.stderr
    assert "Traceback" not in answer.stderr
    assert not (project / "app" / "IMPORTED").exists()


@pytest.mark.slow
def test_the_stylesheets_load_from_the_wheel_not_from_the_projects_styles(installed, tmp_path):
    project = project_with_its_own_app(tmp_path / "project")
    code = """if True:
        import sys
        from pathlib import Path
        import ctxtui_launcher
        home = ctxtui_launcher.own_packages_first()
        from app.stylesheets import stylesheets
        from textual.css.stylesheet import Stylesheet
        names = sorted(p.name for p in Path(home, "styles").glob("*.tcss"))
        paths = stylesheets(*names)
        from textual.app import App
        sheet = Stylesheet(variables=App().get_css_variables())
        sheet.read_all(paths)
        sheet.parse()
        print(home)
        print(len(paths))
        print(paths[names.index("app.tcss")].read_text()[:40])
    """
    env = user_env(tmp_path, PYTHONPATH=".")
    done = run([installed / "python", "-c", code], project, env)
    assert done.returncode == 0, done.stderr[-3000:]
    home, count, head = done.stdout.split("\n", 2)
    assert Path(home).is_relative_to(installed.parent) and "site-packages" in home
    assert int(count) == len(list((ROOT / "styles").glob("*.tcss")))
    assert head.rstrip("\n") == (ROOT / "styles" / "app.tcss").read_text()[:40].rstrip("\n")
    assert not (project / "app" / "IMPORTED").exists()


# ---- the start-up guard in a checkout (fast: no wheel) --------------------------------------------

def launch(cwd: Path, env: dict[str, str], *prelude: str) -> subprocess.CompletedProcess:
    """app/cli/launcher.py run as the console script runs it, after `prelude` edits sys.path."""
    code = "\n".join(["import runpy, sys", *prelude, "sys.argv = ['ctxtui', '--version']",
                      f"runpy.run_path({str(LAUNCHER)!r}, run_name='__main__')"])
    return run([sys.executable, "-c", code], cwd, env)


def test_the_launcher_maps_ctxtuis_packages_past_a_shadowing_folder(tmp_path):
    project = project_with_its_own_app(tmp_path / "project")
    done = launch(project, user_env(tmp_path, PYTHONPATH="."))
    assert (done.returncode, done.stdout.strip()) == (0, f"ctxtui {VERSION}"), done.stderr
    assert not (project / "app" / "IMPORTED").exists()


def test_the_launcher_says_how_to_fix_a_clash_it_cannot_map(tmp_path):
    # no folder on sys.path holds ctxtui's packages (a broken install): the project's app shadows them
    project = project_with_its_own_app(tmp_path / "project")
    done = launch(project, user_env(tmp_path), "from pathlib import Path",
                  f"sys.path[:] = [{str(project)!r}] + [p for p in sys.path if p and Path(p) != Path({str(ROOT)!r})]")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "ctxtui: cannot load its own packages" in done.stderr and "PYTHONPATH" in done.stderr
    assert str(project / "app") in done.stderr and "Traceback" not in done.stderr
    assert (project / "app" / "IMPORTED").exists()      # what the other tests see when the guard fails
