"""Patch vLLM 0.33.0's own MRV2 code and run it (``python -m lab patch``, docs/patch.md).

- ``diff.py``: the patch as text: its paths checked (only ``vllm/v1/worker/gpu/``), applied to copies of the
  wheel's files in a scratch git repository, its ``git patch-id`` and ``git format-patch`` text.
- ``overlay.py``: in ``.venv-vllm``, the import hook that loads the patched files in place of the wheel's,
  and the proof that the lines the patch added ran.
- ``harness.py``: the conformance harness on a scenario, every value vLLM produces kept (and the
  standalone draft model's whole ``propose``).
- ``__main__.py``: the ``.venv-vllm`` side (``run``, ``locate``); ``runner.py`` starts it.
- ``judge.py``: the verdict (per draft pass told vs needed vs the rule, R3's capture, every other field
  against unpatched 0.33.0), ``patched_trace.py``: the Trace labelled with the patch,
  ``upstream.py``: the test in vLLM's own style that the lab runs both ways.
"""
