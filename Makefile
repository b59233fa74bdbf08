# Everything a fresh machine needs: `make demo` runs the main job, `make test` the tests.
# Both create and fill the local virtual environment (.venv) on first use.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
OUT ?= out

.PHONY: demo test bench anchors clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[all]"
	touch $(STAMP)

demo: $(STAMP)
	$(PY) demos/humanoid_balance.py --out $(OUT)/balance_talos

test: $(STAMP)
	$(PY) -m pytest -q -n 2 --dist loadfile

bench: $(STAMP)
	$(PY) -m benchmarks.dynamics --json

# Side environments with TSID and placo, for side-by-side timing of the control step.
anchors:
	bash ../shared/anchors/setup.sh

clean:
	rm -rf $(VENV) $(OUT) .pytest_cache
