"""The pydantic models and server/openapi.json agree on every property."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

import sgam.models as m

# The inline schemas of the routes, and the models that read or write them.
INLINE = {
    ("GET", "/v1/episodes", "200"): m.EpisodeList,
    ("GET", "/v1/episodes/{id}/extractions", "200"): m.ExtractionList,
    ("GET", "/v1/subjects/{subject}/attributes/{attribute}", "200"): m.AttributeValue,
    ("GET", "/v1/subjects/{subject}/traverse", "200"): m.HopList,
    ("GET", "/v1/pending", "200"): m.CandidateList,
    ("GET", "/v1/receipts", "200"): m.ReceiptList,
    ("POST", "/v1/replay", "200"): m.ReplayResult,
    ("POST", "/v1/pending/{id}/confirm", "body"): m.ConfirmRequest,
    ("POST", "/v1/pending/{id}/dismiss", "body"): m.DismissRequest,
    ("POST", "/v1/forget", "body"): m.ForgetRequest,
}
# Nested inline schemas.
NESTED = {
    ("Extraction", "accepted"): m.ExtractionAccepted,
    ("Extraction", "rejected"): m.ExtractionRejected,
    ("RecallContext", "instants"): m.RecallInstants,
    ("RecallContext", "evidence"): m.RecallEvidence,
    ("RecallContext", "omitted"): m.RecallOmitted,
    ("Error", "error"): m.ErrorDetail,
}
NESTED_DEEPER = {
    ("RecallContext", "evidence", "superseded"): m.RecallSuperseded,
}


def properties(doc: dict, schema: dict) -> tuple[set[str], set[str]]:
    """A schema's properties and required ones, through $ref and allOf."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return properties(doc, doc["components"]["schemas"][name])
    props, required = set(schema.get("properties", {})), set(schema.get("required", []))
    for part in schema.get("allOf", []):
        p, r = properties(doc, part)
        props |= p
        required |= r
    return props, required


def fields(model: type[BaseModel]) -> set[str]:
    return {f.alias or name for name, f in model.model_fields.items()}


def required(model: type[BaseModel]) -> set[str]:
    return {f.alias or name for name, f in model.model_fields.items() if f.is_required()}


def inner(schema: dict) -> dict:
    return schema.get("items", schema)


def test_every_component_schema_has_its_model(openapi_doc: dict) -> None:
    for name, schema in openapi_doc["components"]["schemas"].items():
        model = getattr(m, name, None)
        assert model is not None, f"no model for components/schemas/{name}"
        props, req = properties(openapi_doc, schema)
        assert fields(model) == props, f"{name}: model {sorted(fields(model))} vs document {sorted(props)}"
        if issubclass(model, m.Request):
            assert required(model) == req, f"{name}: required fields differ"


@pytest.mark.parametrize("where", sorted(INLINE, key=str))
def test_inline_schemas_have_models(openapi_doc: dict, where: tuple[str, str, str]) -> None:
    method, path, what = where
    op = openapi_doc["paths"][path][method.lower()]
    if what == "body":
        schema = op["requestBody"]["content"]["application/json"]["schema"]
    else:
        schema = op["responses"][what]["content"]["application/json"]["schema"]
    props, req = properties(openapi_doc, schema)
    model = INLINE[where]
    assert fields(model) == props
    if issubclass(model, m.Request):
        assert required(model) == req


def test_nested_inline_schemas_have_models(openapi_doc: dict) -> None:
    for (parent, prop), model in NESTED.items():
        schema = inner(openapi_doc["components"]["schemas"][parent]["properties"][prop])
        props, _ = properties(openapi_doc, schema)
        assert fields(model) == props, f"{parent}.{prop}"
    for (parent, prop, sub), model in NESTED_DEEPER.items():
        schema = inner(inner(openapi_doc["components"]["schemas"][parent]["properties"][prop])["properties"][sub])
        props, _ = properties(openapi_doc, schema)
        assert fields(model) == props, f"{parent}.{prop}.{sub}"


def test_enums_agree(openapi_doc: dict) -> None:
    s = openapi_doc["components"]["schemas"]
    from typing import get_args

    def literal(model: type[BaseModel], field: str) -> set[Any]:
        ann = model.model_fields[field].annotation
        out: set[Any] = set()
        for a in get_args(ann):
            out |= set(get_args(a))
        return {x for x in out if isinstance(x, str)}

    assert literal(m.EpisodeRequest, "extract") == set(s["EpisodeRequest"]["properties"]["extract"]["enum"])
    assert literal(m.Candidate, "reason") == set(s["Candidate"]["properties"]["reason"]["enum"])
    assert literal(m.Extraction, "status") == set(s["Extraction"]["properties"]["status"]["enum"])
    assert literal(m.RecallRequest, "evidence") == set(s["RecallRequest"]["properties"]["evidence"]["enum"])
    assert literal(m.RecallFact, "status") == set(s["RecallFact"]["allOf"][1]["properties"]["status"]["enum"])
    assert literal(m.ErrorDetail, "code") == set(s["Error"]["properties"]["error"]["properties"]["code"]["enum"])


def test_answers_keep_unknown_properties() -> None:
    f = m.Fact.model_validate({"fact_id": 1, "value": 1, "new_field": "kept"})
    assert f.model_extra == {"new_field": "kept"}
    with pytest.raises(ValueError):
        m.AssertRequest.model_validate({"subject": "s", "attribute": "a", "value": 1, "valid_from": "x",
                                        "source": "e", "tenant": "other"})
