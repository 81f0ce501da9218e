# Two commands on a fresh machine: `make demo` and `make test`. Both create .venv when missing.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# The published baselines the experiments compare against (extra `structnets[baselines]`), installed
# apart from the environment: importable by the tests only, so that a run never switches on their
# hour-long units (deel-torchlip's conv net: about 53 min of 2 cores per seed at the full budget).
BASELINES := $(VENV)/baselines

# Verified data files live beside the project root; never copy them into the repository.
SHARED_DATA := $(abspath ../shared/data)
ifneq ($(wildcard $(SHARED_DATA)),)
export STRUCTNETS_DATA ?= $(SHARED_DATA)
endif

.PHONY: setup demo test lint bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -c constraints.txt torch==2.13.0
	$(PY) -m pip install -q -c constraints.txt -e '.[test,compress,fast]'
	touch $(STAMP)

# The quick presets; each prints its table and writes runs/demo-NAME/ (report.html to open in a browser,
# table.md, figures/).
# Re-running resumes, so a second `make demo` only re-prints the tables.
demo: setup
	$(VENV)/bin/structnets run lowrank-uci --quick --jobs 2 --out runs/demo-lowrank-uci
	$(VENV)/bin/structnets run dlor-blindspot --quick --jobs 2 --out runs/demo-dlor-blindspot
	$(VENV)/bin/structnets run dlor-sawtooth --quick --jobs 2 --out runs/demo-dlor-sawtooth
	$(VENV)/bin/structnets run swish-construction --quick --jobs 2 --out runs/demo-swish-construction
	$(VENV)/bin/structnets run smoothness-rates --quick --jobs 2 --out runs/demo-smoothness-rates

$(BASELINES)/.installed: constraints.txt
	$(PY) -m pip install -q -c constraints.txt --no-deps --upgrade --target $(BASELINES) deel-torchlip
	touch $@

test: setup lint $(BASELINES)/.installed
	PYTHONPATH=$(abspath $(BASELINES)) $(PY) -m pytest -q -n 2

# Lint (ruff) and format check, then types (mypy); configured in pyproject.toml.
lint: setup
	$(PY) -m ruff check src tests benchmarks
	$(PY) -m ruff format --check src tests benchmarks
	$(PY) -m mypy

bench: setup
	$(PY) benchmarks/lowrank_speed.py
	$(PY) benchmarks/lipschitz_constraint.py
	$(PY) benchmarks/lipschitz_conv_step.py
	$(PY) benchmarks/rates_refiners.py
	$(PY) benchmarks/adam_step.py
	$(PY) benchmarks/certificate_cache.py
	$(PY) benchmarks/fit_checkpoint.py
	$(PY) benchmarks/forward_rounding.py
	$(PY) benchmarks/ensemble_trainer.py
	$(PY) benchmarks/dlor_seed_batched.py

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache
