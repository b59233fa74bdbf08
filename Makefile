# Everything a fresh machine needs: `make demo` runs the main job, `make test` the tests.
# Both create and fill the local virtual environment (.venv) on first use.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
OUT ?= out

.PHONY: demo check test bench anchors clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[all]"
	touch $(STAMP)

demo: $(STAMP)
	$(PY) demos/humanoid_balance.py --out $(OUT)/balance_talos

# Lint, format check and type check of the public API (run by `make test` first, as in CI).
check: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy

test: check
	$(PY) -m pytest -q -n 2 --dist loadfile

bench: $(STAMP)
	$(PY) -m benchmarks.dynamics --json

# Side environments with TSID and placo, for side-by-side timing of the control step
# (benchmarks/anchors: python -m benchmarks.controller --anchors runs them).
anchors:
	PYTHON=$(PYTHON) bash benchmarks/anchors/setup.sh

clean:
	rm -rf $(VENV) $(OUT) .pytest_cache
