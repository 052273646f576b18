# Two set-up commands for a fresh machine (see README):
#   make demo   opens the lab's Gradio app on http://127.0.0.1:7860 (embedded CPU engine)
#   make test   runs the test suite
# Both create and fill .venv themselves and are idempotent.
PY      ?= python3
VENV    := .venv
VPY     := $(VENV)/bin/python
STAMP   := $(VENV)/.installed
PRESET  ?= short-decode-long-context
CHROMIUM := /usr/bin/chromium

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

# The browser test drives Debian's chromium through Playwright (never `playwright install`).
$(CHROMIUM):
	@command -v apt-get >/dev/null || { echo "error: $(CHROMIUM) is missing and there is no apt-get: install chromium for the browser test" >&2; exit 1; }
	apt-get install -y -q chromium || { apt-get update -q && apt-get install -y -q chromium; } || \
	  { echo "error: could not install chromium with apt-get (needs root and Debian package access)" >&2; exit 1; }

test: $(STAMP) $(CHROMIUM)
	$(VPY) -m pytest -q

bench: $(STAMP)
	$(VPY) -m lab bench engine

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
