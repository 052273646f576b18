"""``python -m lab deployment --json``: the answer as fields a script reads — names, numbers as numbers,
the capture sizes as a list, each path's told and kernel-visible values per era — with the prose beside
them under their own keys. The document is the ``Answer`` itself (answer_types.py ``to_json``) and ``SCHEMA``
(JSON Schema, draft 2020-12) is derived from the same classes: what docs/deployments.md documents and
tests/test_deployment_json.py checks every answer against."""

from __future__ import annotations

from lab.deployment.answer_types import Answer, FromLog, PathRow, Resolution, Resolved, json_schema, to_json

SCHEMA_ID = "maxseqlen-lab/deployment-answer/1"

SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": SCHEMA_ID,
    **json_schema(Answer),
}
# The document names its schema first.
SCHEMA["properties"] = {"schema": {"const": SCHEMA_ID}, **SCHEMA["properties"]}
SCHEMA["required"] = ["schema", *SCHEMA["required"]]
# The parts docs/deployments.md documents field by field.
RESOLVED, PATH, FROM_LOG, RESOLUTION = (json_schema(c) for c in (Resolved, PathRow, FromLog, Resolution))


def answer_json(a: Answer) -> dict:
    """The ``--json`` document of answer ``a`` (SCHEMA)."""
    return {"schema": SCHEMA_ID, **to_json(a)}
