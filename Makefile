# Two commands on a fresh machine: `make demo` and `make test`. Both create .venv when missing.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

# Verified data files live beside the project root; never copy them into the repository.
SHARED_DATA := $(abspath ../shared/data)
ifneq ($(wildcard $(SHARED_DATA)),)
export STRUCTNETS_DATA ?= $(SHARED_DATA)
endif

.PHONY: setup demo test bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -c constraints.txt torch==2.13.0
	$(PY) -m pip install -q -c constraints.txt -e '.[test]'
	touch $(STAMP)

demo: setup
	$(VENV)/bin/structnets run lowrank-uci --quick --out runs/demo-lowrank-uci

test: setup
	$(PY) -m pytest -q -n 2

bench: setup
	$(PY) benchmarks/lowrank_speed.py

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache
