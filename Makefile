# Two commands matter: `make run` and `make test`. Both create .venv on first use.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
EXAMPLE ?= resources/examples/seed1_svd_dynamic_shape.py

.PHONY: run test lint check bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/tfviz check $(EXAMPLE); test $$? -le 1

lint: $(STAMP)
	$(BIN)/ruff check tfviz app tests
	$(BIN)/lint-imports

test: $(STAMP) lint
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python tests/bench/bench_check.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
