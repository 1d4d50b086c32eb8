# Two commands matter: `make run` and `make test`. Both create .venv on first use.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
EXAMPLE ?= resources/examples/program_seed1_svd.py

.PHONY: run check test test-quick bytecode corpus lint bench bench-program bench-gui graphviz qt-libs clean

# uv installs the dependencies (TensorFlow alone is over a gigabyte unpacked) in under half
# of pip's time; where uv can't be had, pip does the same install. Bytecode is compiled as
# pip compiles it: without it, each of the suite's processes would compile TensorFlow anew.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet uv \
	  && $(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python -e '.[test]' \
	  || $(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

# Graphviz's `dot` lays out small groups best; tfviz runs without it.
graphviz:
	@command -v dot >/dev/null 2>&1 || { \
	  if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq graphviz) \
	      >/dev/null 2>&1 || true; \
	  fi; \
	  command -v dot >/dev/null 2>&1 || echo "Graphviz not installed: tfviz uses its own layout."; }

# Qt's X11 plugin needs a few system libraries that minimal Linux installs lack.
QT_XCB_LIBS := libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 libxcb-image0 libxcb-render-util0 \
	libxcb-shape0 libxcb-xinerama0 libxcb-xkb1 libxkbcommon-x11-0 libegl1 libgl1 libfontconfig1 libdbus-1-3
qt-libs:
	@if command -v dpkg >/dev/null 2>&1 && ! dpkg -s $(QT_XCB_LIBS) >/dev/null 2>&1 \
	  && command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(QT_XCB_LIBS)) \
	    >/dev/null 2>&1 || echo "Could not install Qt's X11 libraries ($(QT_XCB_LIBS))."; \
	fi

run: $(STAMP) graphviz qt-libs
	$(BIN)/tfviz $(EXAMPLE)

check: $(STAMP)
	$(BIN)/tfviz check $(EXAMPLE); test $$? -le 1

lint: $(STAMP)
	$(BIN)/ruff check tfviz app tests
	$(BIN)/ruff format --check tfviz app tests
	$(BIN)/lint-imports
	$(BIN)/mypy

# Test files run side by side, one per core (JOBS=1: one at a time); a file's tests stay together.
JOBS ?= auto
PYTEST := QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -q -n $(JOBS) --dist loadfile

# Bytecode for tfviz and the app, written once: each of the suite's hundreds of processes
# (every tfviz command, worker and renderer) would otherwise compile what it imports anew
# wherever PYTHONDONTWRITEBYTECODE is set.
bytecode: $(STAMP)
	@$(BIN)/python -m compileall -q tfviz app >/dev/null

# The window's tests run in processes of their own: a test process that has run a program in
# process (tfviz's program mode parks the program's thread at its step, for the process's life)
# and then made Qt widgets was seen to crash in the cycle collector (in a window test's widget, and
# in a module's closing collection after it made a QApplication).
test: $(STAMP) graphviz lint bytecode
	$(PYTEST) --ignore=tests/gui
	$(PYTEST) tests/gui

# The inner loop: without the corpus (tests/test_corpus.py) and the slow files (tests/conftest.py's
# SLOW_FILES, 7 s or more each); `make test` is the full gate.
test-quick: $(STAMP) graphviz lint bytecode
	$(PYTEST) -m "not corpus and not slow" --ignore=tests/gui
	$(PYTEST) -m "not corpus and not slow" tests/gui

# The corpus alone, with its table: program, TensorFlow's verdict, tfviz's, agreement, time.
corpus: $(STAMP)
	$(BIN)/python -m pytest -q -rxXf tests/test_corpus.py

# Every row of tfviz's cost against the plain script (loss, program, warm re-run, scale).
bench: $(STAMP)
	$(BIN)/python tests/bench/bench_speed.py

bench-program: $(STAMP)
	$(BIN)/python tests/bench/bench_program.py

bench-gui: $(STAMP) graphviz
	QT_QPA_PLATFORM=offscreen $(BIN)/python tests/bench/bench_gui.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
	find tfviz app tests -name __pycache__ -prune -exec rm -rf {} +
