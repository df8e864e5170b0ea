# The one place commands are spelled out. `make help` lists the targets.
#
# Everything runs in the project's own virtual environment (.venv, created on first use with the
# first `python3` on PATH), so no step writes into the system interpreter (PEP 668 safe).
# PYTHON picks the interpreter that creates the venv; PY the one that runs everything.
PYTHON ?= python3
VENV ?= .venv
PY ?= $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check
# PY as an absolute path for scripts that change directory (a bare name stays a bare name)
PY_ABS := $(if $(findstring /,$(PY)),$(abspath $(PY)),$(PY))
STAMP := $(VENV)/.installed
# maturin >= 1.9.4 for the SPDX `license = "MIT"` expression (PEP 639); `maturin[zig]` brings
# ziglang from PyPI, which links against glibc 2.17 for the manylinux2014 tag
WHEEL_TOOLS := "maturin[zig]>=1.9.4,<2" "auditwheel>=6"
.DEFAULT_GOAL := help

.PHONY: help
help: ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

$(VENV)/bin/python:
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 10), "Python >= 3.10 needed"' \
	  || { echo "$(PYTHON) is older than 3.10; run make PYTHON=python3.X"; exit 1; }
	@$(PYTHON) -c 'import venv, ensurepip' 2>/dev/null \
	  || { echo "$(PYTHON) lacks venv/ensurepip: apt-get install python3-venv"; exit 1; }
	$(PYTHON) -m venv $(VENV)

# re-installed (the Rust core rebuilt) when the metadata, the Rust sources or the mappings change
$(STAMP): $(VENV)/bin/python pyproject.toml Cargo.toml Cargo.lock \
    $(shell find rust -name '*.rs') $(wildcard python/checkfu_fast/mappings/*.json)
	$(PIP) install -q -e '.[test,dev]'
	@touch $@

.PHONY: install
install: $(STAMP) ## create .venv, build the Rust core and install the package (editable) with test deps

.PHONY: demo
demo: install ## normalize the shipped sample streams, replay the golden and oneshot vectors
	$(PY) -m checkfu_fast normalize --summary vectors/samples/*.jsonl > demo-events.jsonl
	@echo "events written to demo-events.jsonl; first one:"
	@head -n 1 demo-events.jsonl | cut -c 1-300
	$(PY) -m checkfu_fast golden vectors/events
	$(PY) -m checkfu_fast vectors vectors/oneshot-v1-author-kit.json vectors/oneshot

.PHONY: test
test: install test-rust test-python ## all tests: Rust unit tests, then pytest

.PHONY: test-rust
test-rust: ## Rust unit tests (no Python needed), and the Arrow writer's (feature arrow)
	cargo test --quiet
	cargo test --quiet --features arrow --lib arrow::

.PHONY: test-python
test-python: ## pytest: golden, differential, corpus, framing, budgets, CLI
	$(PY) -m pytest -q

.PHONY: lint
lint: install ## rustfmt, clippy -D warnings, ruff, mypy --strict, stubtest (the .pyi of the core)
	cargo fmt --check
	cargo clippy --quiet --all-targets -- -D warnings
	cargo clippy --quiet --all-targets --features python -- -D warnings
	$(PY) -m ruff check python tests benches
	$(PY) -m ruff format --check python tests benches
	$(PY) -m mypy
	$(PY) -m mypy.stubtest checkfu_fast --mypy-config-file pyproject.toml \
	  --allowlist stubtest-allowlist.txt

.PHONY: format
format: install ## apply rustfmt and ruff format
	cargo fmt
	$(PY) -m ruff format python tests benches
	$(PY) -m ruff check --fix python tests benches

.PHONY: wheel
wheel: $(VENV)/bin/python ## abi3 manylinux2014 x86_64 wheel (maturin --zig) and sdist into dist/, checked by auditwheel
	$(PIP) install -q $(WHEEL_TOOLS)
	@# .venv/bin first on PATH: maturin finds zig (python -m ziglang) through the python on PATH
	PATH="$(abspath $(VENV))/bin:$$PATH" $(PY) -m maturin build --release --zig \
	  --compatibility manylinux2014 --target x86_64-unknown-linux-gnu --out dist
	$(PY) -m maturin sdist --out dist
	$(VENV)/bin/auditwheel show dist/checkfu_fast-*-manylinux*.whl

.PHONY: bench
bench: install ## native vs reference vs orjson baseline, side by side (pytest-benchmark)
	$(PY) -m pytest benches --benchmark-enable --benchmark-group-by=group -q

.PHONY: fuzz
fuzz: install ## fuzz smoke run: 50 s per core target and the differential, 30 s per dialect (FUZZ_SECONDS, FUZZ_DIALECT_SECONDS; needs libfuzzer-14-dev)
	$(PIP) install -q -r fuzz/requirements.txt
	PY=$(PY_ABS) fuzz/run.sh $(or $(FUZZ_SECONDS),50) $(or $(FUZZ_DIALECT_SECONDS),30)

.PHONY: golden
golden: ## regenerate expected golden files from the reference (review the diff!)
	$(PY) vectors/regen.py

.PHONY: clean
clean: ## remove build and test artifacts (not .venv: `rm -rf .venv` for that)
	rm -rf target fuzz/target dist .pytest_cache .hypothesis .benchmarks .mypy_cache \
	  demo-events.jsonl python/checkfu_fast/*.so $(STAMP)
