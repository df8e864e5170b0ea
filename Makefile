# The one place commands are spelled out. `make help` lists the targets.
PY ?= python3
PIP := $(PY) -m pip
.DEFAULT_GOAL := help

.PHONY: help
help: ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

.PHONY: install
install: ## build the Rust core and install the package (editable) with test deps
	$(PIP) install -q --disable-pip-version-check -e '.[test,dev]'

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
test-rust: ## Rust unit tests (no Python needed)
	cargo test --quiet

.PHONY: test-python
test-python: ## pytest: golden, differential, corpus, framing, budgets, CLI
	$(PY) -m pytest -q

.PHONY: lint
lint: ## rustfmt, clippy -D warnings, ruff
	cargo fmt --check
	cargo clippy --quiet --all-targets -- -D warnings
	cargo clippy --quiet --all-targets --features python -- -D warnings
	$(PY) -m ruff check python tests benches
	$(PY) -m ruff format --check python tests benches

.PHONY: format
format: ## apply rustfmt and ruff format
	cargo fmt
	$(PY) -m ruff format python tests benches
	$(PY) -m ruff check --fix python tests benches

.PHONY: bench
bench: install ## native vs reference vs orjson baseline, side by side (pytest-benchmark)
	$(PY) -m pytest benches --benchmark-enable --benchmark-group-by=group -q

.PHONY: fuzz
fuzz: ## fuzz smoke run: 60 s per core target and the differential, 30 s per dialect (FUZZ_SECONDS, FUZZ_DIALECT_SECONDS; needs libfuzzer-14-dev)
	$(PIP) install -q --disable-pip-version-check -r fuzz/requirements.txt
	PY=$(PY) fuzz/run.sh $(or $(FUZZ_SECONDS),60) $(or $(FUZZ_DIALECT_SECONDS),30)

.PHONY: golden
golden: ## regenerate expected golden files from the reference (review the diff!)
	$(PY) vectors/regen.py

.PHONY: clean
clean: ## remove build and test artifacts
	rm -rf target fuzz/target .pytest_cache .hypothesis .benchmarks demo-events.jsonl python/checkfu_fast/*.so
