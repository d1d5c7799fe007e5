# Everything from nothing: `make demo` and `make test` create .venv and install it first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup demo test check lint imports typecheck docs-check docs bench clean lava-check

# The first `make demo` or `make test` installs into .venv (about 3 minutes on a 2-core machine), showing pip's
# progress and the time it took; later runs skip it until pyproject.toml changes
$(STAMP): pyproject.toml
	@mkdir -p $(VENV) && date +%s > $(VENV)/.install-started
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "installing torch 2.13.0 (the CPU wheel) into $(VENV), step 1 of 2;" \
		"the first install takes about 3 minutes on a 2-core machine"
	$(PY) -m pip install torch==2.13.0
	@echo "installing hybridai with its extras (.[all]: PennyLane, Qiskit, Mitiq, Nengo, Akida, the docs and test tools)" \
		"into $(VENV), step 2 of 2"
	$(PY) -m pip install -e '.[all]'
	@echo "installed in $$(( $$(date +%s) - $$(cat $(VENV)/.install-started) )) s"
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

# The edit-test loop: lint, the import contract, the type check, then the tests not marked slow (no docs build, no
# reruns under other CPU code paths); `make test` is the full run
check: $(STAMP) lint imports typecheck
	$(PY) -m pytest -q -m "not slow"

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

# The netx export against Lava itself: lava-nc 0.10 and lava-dl 0.6 (Python 3.10 only, about 6 GB with the torch
# they pull) in $(LAVA_VENV), built once; then the tests that run exported files in Lava's fixed-point models.
# PYTHON310: a Python 3.10 (found on PATH or under pyenv when unset).
LAVA_VENV ?= .cache/lava
lava-check: $(STAMP)
	@set -e; py="$(PYTHON310)"; \
	if [ -z "$$py" ]; then \
		for candidate in python3.10 $$(ls -d "$${PYENV_ROOT:-$$HOME/.pyenv}"/versions/3.10*/bin/python3.10 2>/dev/null); do \
			if "$$candidate" -c "" 2>/dev/null; then py="$$candidate"; break; fi; \
		done; \
	fi; \
	if [ -z "$$py" ]; then echo "lava-check needs Python 3.10 (Lava 0.10 supports only it): PYTHON310=/path/to/python3.10"; exit 1; fi; \
	if [ ! -f $(LAVA_VENV)/.installed ]; then \
		echo "installing lava-nc 0.10 and lava-dl 0.6 into $(LAVA_VENV) with $$py (once; a few minutes)"; \
		"$$py" -m venv $(LAVA_VENV); \
		$(LAVA_VENV)/bin/python -m pip install lava-nc==0.10.0 lava-dl==0.6.0; \
		touch $(LAVA_VENV)/.installed; \
	fi
	HYBRIDAI_LAVA_PYTHON=$(LAVA_VENV)/bin/python $(PY) -m pytest -q -rs tests/neuromorphic/test_netx_export.py tests/neuromorphic/test_netx_lif.py

# Every benchmark (peer and hybridai side by side, ratios printed) into one page of the docs site, $(RESULTS),
# one section per script, every section written by this target (nothing added by hand). A script runs once with its
# default arguments, or once per `bench-args: ...` line in its docstring, with those arguments (two lines
# `bench-args: --qubits 14 16` and `bench-args: --qubits 18 20`: two runs). Each run is shown under its command,
# date, machine (cores, CPU model) and wall time, and is stopped after BENCH_TIMEOUT seconds; the header states the
# last run's machine. A script prints Markdown (its tables and lists get blank lines around them so that they render);
# a failed run's last error lines go in a ```text block (shown on the page, never run by the docs tests).
# OpenMP and MKL get one thread; each script sets and prints its torch threads. A subset,
# `make bench BENCH="benchmarks/loihi.py benchmarks/zne.py"`, replaces only its sections and keeps the others.
BENCH_ALL := $(filter-out benchmarks/machine.py,$(wildcard benchmarks/*.py))
BENCH ?= $(BENCH_ALL)
BENCH_TIMEOUT ?= 3600
RESULTS ?= docs/results.md
bench: $(STAMP)
	@set -e; runs=$$(mktemp -d); trap 'rm -rf "$$runs"' EXIT; \
	machine="$$(uname -m), $$(nproc) cores, CPU: $$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"; \
	for script in $(BENCH); do \
		section="$$runs/$$(echo "$$script" | tr / _)"; \
		printf '## %s\n' "$$script" > "$$section"; \
		{ grep -E '^[[:space:]]*bench-args:' "$$script" || echo; } \
			| sed -E 's/^[[:space:]]*bench-args:[[:space:]]*//' > "$$runs/args"; \
		while IFS= read -r args; do \
			echo "running $$script $$args"; \
			start=$$(date +%s); status=0; \
			OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 timeout $(BENCH_TIMEOUT) $(PY) "$$script" $$args \
				< /dev/null > "$$runs/out" 2> "$$runs/err" || status=$$?; \
			case $$status in \
				0) how="";; \
				124) how=", stopped after $(BENCH_TIMEOUT) s";; \
				*) how=", failed with exit status $$status";; \
			esac; \
			printf '\n`python %s%s` (%s, %s; %s s%s):\n\n' "$$script" "$${args:+ $$args}" "$$(date -u +%Y-%m-%d)" \
				"$$machine" "$$(( $$(date +%s) - start ))" "$$how" >> "$$section"; \
			awk 'function kind(line) { return line ~ /^[|]/ ? 1 : line ~ /^- / ? 2 : 0 } \
				{ while (match($$0, /<[A-Za-z\/]/)) $$0 = substr($$0, 1, RSTART - 1) "&lt;" substr($$0, RSTART + 1) } \
				$$0 != "" && prev != "" && kind($$0) != kind(prev) {print ""} {print; prev = $$0}' \
				"$$runs/out" >> "$$section"; \
			if [ $$status -ne 0 ] && [ -s "$$runs/err" ]; then \
				printf '\n```text\n%s\n```\n' "$$(tail -n 20 "$$runs/err")" >> "$$section"; \
			fi; \
		done < "$$runs/args"; \
	done; \
	{ \
		echo "# Results"; \
		printf '\nWritten by `make bench`, last run %s on %s; ' "$$(date -u +%Y-%m-%d)" "$$machine"; \
		echo 'OMP_NUM_THREADS=1, MKL_NUM_THREADS=1 (each script states its torch threads, each run its date and machine).'; \
		echo 'Each section is one script of `benchmarks/`, hybridai beside a peer library; rerun one section with'; \
		echo '`make bench BENCH=benchmarks/zne.py` (the other sections are kept as they are).'; \
		for script in $(sort $(BENCH_ALL) $(BENCH)); do \
			section="$$runs/$$(echo "$$script" | tr / _)"; \
			if [ -f "$$section" ]; then echo; cat "$$section"; \
			elif [ -f $(RESULTS) ] && grep -qxF "## $$script" $(RESULTS); then \
				echo; awk -v heading="## $$script" '$$0 == heading {on = 1; print; next} /^## [^ ]+[.]py$$/ {on = 0} on' $(RESULTS); \
			fi; \
		done; \
	} | cat -s > "$$runs/results"; \
	mv "$$runs/results" $(RESULTS); \
	echo "wrote $(RESULTS)"
