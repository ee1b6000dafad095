PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
# make run listens on this machine only; `make run HOST=0.0.0.0` to be reached from others
# (`:=`: a HOST in the environment, the machine's name in some shells, is not read)
HOST := 127.0.0.1
export DATABASE_URL ?= sqlite+aiosqlite:///rltracker.db

.PHONY: run test install install-test migrate train catalog eval bench lint clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip

$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(BIN)/pip install -e .
	touch $@

$(VENV)/.installed-test: $(BIN)/python pyproject.toml
	$(BIN)/pip install -e '.[test]'
	touch $(VENV)/.installed $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

migrate: install
	$(BIN)/rltracker migrate

run: install migrate
	$(BIN)/rltracker serve --dev --host $(HOST) --port $(PORT)

test: install-test
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

train: install-test
	$(BIN)/python -m training

# The facts of analyzers/catalog/*.yaml from ../shared/data (CHECK=1: write nothing, exit 1 on a difference).
catalog: install
	$(BIN)/python -m training.catalog $(if $(CHECK),--check)

eval: install-test
	$(BIN)/python benchmarks/evaluate.py
	$(BIN)/python benchmarks/evaluate_rules.py

bench: install
	$(BIN)/python benchmarks/webhook_throughput.py
	$(BIN)/python benchmarks/webhook_throughput.py --worker
	$(BIN)/python benchmarks/webhook_throughput.py --worker-processes 1 --drain 10000
	$(BIN)/python benchmarks/matching.py
	$(BIN)/python -m compileall -q bot analyzers  # start-up from bytecode, as the image starts (Dockerfile)
	$(BIN)/python benchmarks/analyze_throughput.py
	$(BIN)/python benchmarks/sync_cost.py

lint: install-test
	$(BIN)/ruff check bot analyzers training tests benchmarks migrations
	$(BIN)/lint-imports

clean:
	rm -rf $(VENV) rltracker.db rltracker.db-wal rltracker.db-shm
