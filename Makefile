# Everything from nothing: `make demo` and `make test` create .venv and install it first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup demo test lint imports typecheck docs-check docs bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[all]'
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/hybridai demo

# lint (ruff check + format), the import contract, the type check, the docs (strict), then the test suite; then the
# tests marked `numerics` again on two other CPU code paths (torch's scalar kernels; AVX2 with MKL's compatible
# branch), one process each, so that no result holds only on this CPU's rounding
test: $(STAMP) lint imports typecheck docs-check
	$(PY) -m pytest -q
	ATEN_CPU_CAPABILITY=default $(PY) -m pytest -q -m numerics
	ATEN_CPU_CAPABILITY=avx2 MKL_CBWR=COMPATIBLE $(PY) -m pytest -q -m numerics

lint: $(STAMP)
	$(VENV)/bin/ruff check hybridai tests benchmarks examples
	$(VENV)/bin/ruff format --check hybridai tests benchmarks examples

imports: $(STAMP)
	$(VENV)/bin/lint-imports

# mypy, configured in pyproject.toml ([tool.mypy]): strict on hybridai.core (the backend contracts), defaults elsewhere;
# its cache (.mypy_cache) makes a second run take seconds
typecheck: $(STAMP)
	$(VENV)/bin/mypy

docs-check: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet --site-dir "$$(mktemp -d)"

docs: $(STAMP)
	$(VENV)/bin/mkdocs build --strict

clean:
	rm -rf $(VENV) build *.egg-info site

# Every benchmark (peer and hybridai side by side, ratios printed) into one Markdown file, with the machine,
# CPU model and thread count; `make bench BENCH="benchmarks/quantum_shots.py benchmarks/quantum_adjoint.py"`
# runs a subset. OpenMP and MKL get one thread; each script sets and prints its torch threads.
BENCH ?= $(filter-out benchmarks/machine.py,$(wildcard benchmarks/*.py))
bench: $(STAMP)
	@echo "# Benchmarks ($$(date -u +%Y-%m-%d))" > benchmarks/RESULTS.md
	@printf '\nMachine: %s, %s cores, CPU: %s; OMP_NUM_THREADS=1, MKL_NUM_THREADS=1 (each script states its torch threads)\n' \
		"$$(uname -m)" "$$(nproc)" "$$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')" \
		>> benchmarks/RESULTS.md
	@for script in $(BENCH); do \
		echo "running $$script"; \
		printf '\n## %s\n\n' "$$script" >> benchmarks/RESULTS.md; \
		OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) $$script >> benchmarks/RESULTS.md 2>/dev/null \
			|| echo "(failed)" >> benchmarks/RESULTS.md; \
	done
	@echo "wrote benchmarks/RESULTS.md"
