"""The commands ring: every ``python -m lab …`` command and every bench, at the edge, importing the library
(after vLLM's ``vllm/entrypoints/cli/``: one module per command group, a table that registers them).

    main.py            the parser; command_modules() registers each module's commands; ``main`` runs one
    scenario_args.py   --preset/--spec/--out of every scenario-taking command, and the kernel-run arguments
    trace.py           presets, simulate, show            kernels.py       backends, simulate --backend …
    export.py          export                             vllm_kernels.py  bench vllm-kernels' flags
    conform.py         conform (in .venv-vllm)            live.py          record, compare, eras
    sweep.py           sweep, gpu-model                   deployment.py    deployment
    claims.py          claims (in .venv-vllm)             cheatsheet.py    cheatsheet (doc_tables.py: the docs' tables)
    bench/             ``python -m lab bench …``: engine, kernels, vllm-kernels, app, export, room, deployment

Nothing in the library (lab/ outside commands/, app/ and real_vllm/) imports this package
(tests/test_imports.py). This package's ``__init__`` imports nothing.
"""
