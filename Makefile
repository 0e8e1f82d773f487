# Two commands matter: `make demo` and `make test`. Both set up .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
REFERENCE ?= ../shared/reference/pollux-osdi21
SIA_REFERENCE ?= ../shared/reference/sia-sosp23

.PHONY: install demo test validate bench bench-command bench-scale bench-million-rows bench-philly bench-philly-quick corrupt-inputs lint docs docs-serve docs-notebooks clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	$(BIN)/python -m goodput_sim.kernel_cache
	touch $(STAMP)

demo: install
	$(BIN)/goodput-sim demo

test: install
	$(BIN)/python -m pytest --numprocesses=auto --maxprocesses=4 --dist=worksteal

validate: install
	$(BIN)/goodput-sim validate --reference $(REFERENCE) --sia-reference $(SIA_REFERENCE)

bench: install
	$(BIN)/python benchmarks/run.py

bench-command: install
	$(BIN)/python benchmarks/bench_command.py

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
	$(BIN)/ruff check goodput_sim tests benchmarks docs examples

# The documentation site (mkdocs.yml, docs/): build it as the test suite does, or serve it with
# live reload at http://127.0.0.1:8000. docs-notebooks runs the notebooks and renders them into
# docs/notebooks/ (a few minutes; commit the result).
docs: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

docs-serve: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve

docs-notebooks: install
	$(BIN)/python docs/render_notebooks.py

clean:
	rm -rf $(VENV) build site *.egg-info .pytest_cache
