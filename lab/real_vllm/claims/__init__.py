"""The lab's claims about vLLM 0.33.0's source (rules.py; the backend records' claims live beside the records
in lab/gpu_model/backend_claims.py) and their checker (check.py: the quote must be in the named symbol, read
by AST from the installed wheel). ``python -m lab claims`` runs every one in .venv-vllm, as
tests/conformance/test_claims_vllm.py does."""
