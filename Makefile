# Two commands matter: `make demo` and `make test`. Both set up .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
REFERENCE ?= ../shared/reference/pollux-osdi21
SIA_REFERENCE ?= ../shared/reference/sia-sosp23

.PHONY: install demo test validate bench bench-scale bench-million-rows bench-philly bench-philly-quick corrupt-inputs lint clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: install
	$(BIN)/goodput-sim demo

test: install
	$(BIN)/python -m pytest

validate: install
	$(BIN)/goodput-sim validate --reference $(REFERENCE) --sia-reference $(SIA_REFERENCE)

bench: install
	$(BIN)/python benchmarks/run.py

bench-scale: install
	$(BIN)/python benchmarks/bench_scale.py

bench-million-rows: install
	$(BIN)/python benchmarks/bench_million_rows.py

bench-philly: install
	$(BIN)/python benchmarks/bench_philly.py

bench-philly-quick: install
	$(BIN)/python benchmarks/bench_philly.py --quick

corrupt-inputs: install
	$(BIN)/python benchmarks/corrupt_inputs.py

lint: install
	$(BIN)/ruff check goodput_sim tests benchmarks

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
