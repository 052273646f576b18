# Two set-up commands for a fresh machine (see README):
#   make demo   runs the lab on the embedded CPU default
#   make test   runs the test suite
# Both create and fill .venv themselves and are idempotent.
PY      ?= python3
VENV    := .venv
VPY     := $(VENV)/bin/python
STAMP   := $(VENV)/.installed
PRESET  ?= short-decode-long-context

.PHONY: demo test venv bench clean

$(STAMP): pyproject.toml
	test -x $(VPY) || $(PY) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	# torch is pinned: 2.13.0 is the CPU build that lies on this disk (an unpinned torch pulls a CUDA build)
	$(VPY) -m pip install -q "torch==2.13.0"
	$(VPY) -m pip install -q -e ".[test,app]" "torch==2.13.0"
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(VPY) app.py --preset $(PRESET)

test: $(STAMP)
	$(VPY) -m pytest -q

bench: $(STAMP)
	$(VPY) -m lab bench engine

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
