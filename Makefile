# afp: the two set-up commands are `make demo` (the main job) and `make test` (the whole suite).
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
AFPC := $(BIN)/afpc
EXAMPLE ?= examples/support/support.afp

.PHONY: demo test bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.test-installed: $(VENV)/.installed
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

tests/js/node_modules: tests/js/package.json
	@if command -v npm >/dev/null 2>&1; then cd tests/js && npm ci --no-audit --no-fund --loglevel=error; \
	else echo "npm not found: the Mermaid parser tests will be skipped"; fi

MESSAGE ?= I was charged twice for order AB-12
SCRIPT ?= small_refund

demo: $(VENV)/.installed
	$(AFPC) check examples/
	@mkdir -p .afp
	$(AFPC) compile $(EXAMPLE) -o .afp/support.ir.json
	$(AFPC) run $(EXAMPLE) --script $(SCRIPT) -m "$(MESSAGE)"
	$(AFPC) why last
	$(AFPC) graph $(EXAMPLE) --run last
	$(AFPC) trace export last --format html -o .afp/report.html
	@echo "The HTML report of this run is in .afp/report.html (open it in a browser)."

test: $(VENV)/.test-installed
	@$(MAKE) --no-print-directory tests/js/node_modules || true
	$(BIN)/python -m pytest -q

bench: $(VENV)/.installed
	$(BIN)/python -m pip install --quiet -e '.[bench]' || echo "bench: LangGraph not installed; its comparison is skipped"
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .afp build dist
