# Both targets create .venv on first use and reinstall when pyproject.toml changes.
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
ARGS ?=

.PHONY: run test bench bench-peer clean

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/ctxtui $(ARGS)

# ruff (style and imports inside functions), import-linter (the layering in pyproject.toml), mypy (the
# files and flags in pyproject.toml's [tool.mypy]: app and agent_core at default strictness, compaction
# strict), then pytest on every core (pytest-xdist's -n auto). Slow tests are skipped unless CI or
# CTXTUI_SLOW=1 is set (tests/conftest.py): `make test CTXTUI_SLOW=1` runs them all, as CI does.
test: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy
	$(PY) -m pytest -n auto

bench: $(STAMP)
	$(PY) bench/engine.py
	$(PY) bench/tui.py
	$(PY) bench/usage.py
	$(PY) bench/replay.py
	$(PY) bench/statusline.py
	$(PY) bench/cache_cost.py
	$(PY) bench/cache_fake_server.py
	$(PY) bench/closed_loop.py
	$(PY) bench/startup.py
	$(PY) bench/session_log.py
	$(PY) bench/file_history.py
	$(PY) bench/sandbox.py
	$(PY) bench/soak.py --only-headless

# ctxtui against the real Claude Code (npm, installed into ~/.cache/ctxtui-bench when missing): ~10 minutes
bench-peer: $(STAMP)
	$(PY) bench/vs_claude_code.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .mypy_cache
