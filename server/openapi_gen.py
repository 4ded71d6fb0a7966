# Writes server/openapi.json, the OpenAPI document of the HTTP API:
#   python3 server/openapi_gen.py > server/openapi.json
# TestOpenAPIMatchesRouter fails when it and the router disagree.
import json
def ref(n): return {"$ref": f"#/components/schemas/{n}"}
def ok(schema, desc="OK"): return {"description": desc, "content": {"application/json": {"schema": schema}}}
errs = {c: {"$ref": f"#/components/responses/{n}"} for c, n in [("400","Invalid"),("401","Unauthenticated"),("403","Forbidden"),("404","NotFound"),("409","Conflict"),("413","TooLarge"),("429","TooMany"),("500","Internal"),("503","Unavailable")]}
def op(summary, resp, params=None, body=None, role="read", secure=True, raw=None):
    o = {"summary": summary, "responses": {"200": resp, **({k: v for k, v in errs.items()} if secure else {"503": errs["503"]})}}
    if secure:
        o["x-sgam-role"] = role
        o["security"] = [{"apiKey": []}]
    else:
        o["security"] = []
    if params: o["parameters"] = params
    if body: o["requestBody"] = {"required": True, "content": {"application/json": {"schema": body}}}
    if raw: o["requestBody"] = {"required": True, "content": raw}
    if body or raw: o["responses"]["408"] = {"$ref": "#/components/responses/Timeout"}
    return o
def q(name, desc, t="string", fmt=None):
    s = {"type": t}
    if fmt: s["format"] = fmt
    return {"name": name, "in": "query", "required": False, "description": desc, "schema": s}
def p(name, desc): return {"name": name, "in": "path", "required": True, "description": desc, "schema": {"type": "string"}}
AT = [q("as_of", "valid instant (RFC 3339 with an offset; default now)", fmt="date-time"), q("known_at", "belief instant (RFC 3339; default now)", fmt="date-time")]
obj = lambda props, req=(): {"type": "object", "additionalProperties": False, "properties": props, **({"required": list(req)} if req else {})}
S = {"type": "string"}; T = {"type": "string", "format": "date-time"}; ANY = {}
doc = {
 "openapi": "3.1.0",
 "info": {"title": "sgam HTTP API", "version": "1", "description": "Schema-guided agent memory: a bitemporal fact ledger behind tenant-bound API keys. The tenant of every request comes from its key. See docs/api.md."},
 "servers": [{"url": "http://127.0.0.1:7420"}],
 "components": {
  "securitySchemes": {"apiKey": {"type": "http", "scheme": "bearer", "description": "an API key from `sgam keys create`"}},
  "schemas": {
   "Error": obj({"error": obj({"code": {"type": "string", "enum": ["invalid","not_found","conflict","unavailable","internal","unauthenticated","forbidden"]}, "field": S, "message": S}, ["code","message"])}, ["error"]),
   "Fact": {"type": "object", "properties": {"fact_id": {"type": "integer"}, "tenant": S, "subject": S, "attribute": S, "member": ANY, "value": ANY, "tombstone": {"type": "boolean"}, "valid_from": T, "valid_to": {"type": ["string","null"], "format": "date-time"}, "recorded_at": T, "retracted_at": {"type": ["string","null"], "format": "date-time"}, "supersedes": {"type": ["integer","null"]}, "sources": {"type": "array", "items": S}, "schema_version": {"type": "integer"}}},
   "Episode": {"type": "object", "properties": {"tenant": S, "episode_id": S, "session": S, "kind": S, "content": S, "occurred_at": T, "recorded_at": T, "metadata": {"type": "object"}, "idempotency_key": S, "retention": S}},
   "Candidate": {"type": "object", "properties": {"pending_id": S, "tenant": S, "subject": S, "attribute": S, "member": ANY, "value": ANY, "valid_from": T, "source": S, "reason": {"type": "string", "enum": ["review","sensitive"]}, "conflicts_with": {"type": ["integer","null"]}, "recorded_at": T, "schema_version": {"type": "integer"}}},
   "WriteResult": {"type": "object", "required": ["fact"], "properties": {"fact": {"oneOf": [ref("Fact"), {"type": "null"}], "description": "the row written; null when the value is held as pending"}, "no_change": {"type": "boolean"}, "kept": {"type": "boolean"}, "pending": ref("Candidate")}},
   "Facts": obj({"facts": {"type": "array", "items": ref("Fact")}}),
   "Trace": {"type": "object", "properties": {"chain": {"type": "array", "items": ref("Fact")}, "episodes": {"type": "array", "items": ref("Episode")}}},
   "Receipt": {"type": "object", "properties": {"receipt_id": S, "tenant": S, "actor": S, "at": T, "kind": S, "target": S, "facts_deleted": {"type": "integer"}, "facts_mended": {"type": "integer"}, "links_removed": {"type": "integer"}, "facts_retained": {"type": "integer"}, "episodes_deleted": {"type": "integer"}, "pending_deleted": {"type": "integer"}, "fact_ids": {"type": "array", "items": {"type": "integer"}}, "episode_ids": {"type": "array", "items": S}}},
   "SchemaVersion": {"type": "object", "properties": {"tenant": S, "store_default": {"type": "boolean"}, "version": {"type": "integer"}, "hash": S, "applied_at": T, "schema": {"type": "object"}, "diff": {"type": "array", "items": S}}},
   "Hop": {"type": "object", "properties": {"depth": {"type": "integer"}, "from": S, "attribute": S, "to": S, "fact": ref("Fact"), "cycle": {"type": "boolean"}}},
   "Ok": obj({"ok": {"type": "boolean"}}),
   "AssertRequest": obj({"subject": S, "attribute": S, "value": ANY, "valid_from": T, "source": S}, ["subject","attribute","value","valid_from","source"]),
   "RetractRequest": obj({"subject": S, "attribute": S, "at": T, "source": S, "value": ANY}, ["subject","attribute","at","source"]),
   "EpisodeRequest": obj({"episode_id": S, "session": S, "kind": S, "content": S, "occurred_at": T, "metadata": {"type": ["object","null"]}, "idempotency_key": S, "retention": S}),
  },
  "responses": {n: {"description": d, "content": {"application/json": {"schema": ref("Error")}}} for n, d in [("Invalid","bad input; field names it"),("Unauthenticated","missing, unknown, malformed or revoked key"),("Forbidden","the key's role may not do this"),("NotFound","the tenant has no such thing"),("Conflict","contradicts what is stored; nothing written"),("TooLarge","body over the limit"),("Timeout","the body did not arrive within the server's read timeout (field body)"),("TooMany","the key's rate limit is spent; see Retry-After"),("Internal","internal error"),("Unavailable","the store cannot serve now")]},
 },
 "paths": {
  "/healthz": {"get": op("Liveness", ok(ref("Ok")), secure=False)},
  "/readyz": {"get": op("Readiness: the store answers", ok(ref("Ok")), secure=False)},
  "/openapi.json": {"get": op("This document", ok({"type": "object"}), secure=False)},
  "/metrics": {"get": {"summary": "Prometheus metrics: requests and latency by route and status, store retries and connections, process", "security": [], "responses": {"200": {"description": "OK", "content": {"text/plain": {"schema": {"type": "string"}}}}}}},
  "/v1/episodes": {"post": op("Capture an episode", ok(ref("Episode")), body=ref("EpisodeRequest"), role="write"),
                   "get": op("List episodes, oldest first", ok(obj({"episodes": {"type": "array", "items": ref("Episode")}})), params=[q("session", "only this session"), q("limit", "1 to 10000 (default 100)", "integer")])},
  "/v1/episodes/{id}": {"get": op("One episode", ok(ref("Episode")), params=[p("id", "episode id")])},
  "/v1/facts": {"post": op("Assert a value (DESIGN 2.1; conflict policies apply)", ok(ref("WriteResult")), body=ref("AssertRequest"), role="write")},
  "/v1/facts/retract": {"post": op("Retract: no value from `at` on (a set: remove the member `value`)", ok(ref("WriteResult")), body=ref("RetractRequest"), role="write")},
  "/v1/facts/{id}/trace": {"get": op("Supersedes chain and source episodes", ok(ref("Trace")), params=[p("id", "fact id")])},
  "/v1/subjects/{subject}": {"get": op("Every attribute of a subject with a value", ok(ref("Facts")), params=[p("subject", "subject id")] + AT)},
  "/v1/subjects/{subject}/attributes/{attribute}": {"get": op("One attribute's value, or a set's members", ok({"type": "object", "properties": {"fact": {"oneOf": [ref("Fact"), {"type": "null"}]}, "facts": {"type": "array", "items": ref("Fact")}}}), params=[p("subject", "subject id"), p("attribute", "attribute")] + AT)},
  "/v1/subjects/{subject}/attributes/{attribute}/history": {"get": op("Every row of a key, in write order", ok(ref("Facts")), params=[p("subject", "subject id"), p("attribute", "attribute")])},
  "/v1/subjects/{subject}/traverse": {"get": op("Follow ref attributes hop by hop", ok(obj({"hops": {"type": "array", "items": ref("Hop")}})), params=[p("subject", "subject id"), q("path", "attributes, comma-separated")] + AT)},
  "/v1/sets/add": {"post": op("Add a member to a set", ok(ref("WriteResult")), body=ref("AssertRequest"), role="write")},
  "/v1/sets/remove": {"post": op("Remove a member from a set", ok(ref("WriteResult")), body=ref("RetractRequest"), role="write")},
  "/v1/pending": {"get": op("Pending candidates, oldest first", ok(obj({"candidates": {"type": "array", "items": ref("Candidate")}})), params=[q("subject", "only this subject")])},
  "/v1/pending/{id}/confirm": {"post": op("Make a candidate a fact", ok(ref("WriteResult")), params=[p("id", "pending id")], body=obj({"episode_id": S}, ["episode_id"]), role="write")},
  "/v1/pending/{id}/dismiss": {"post": op("Delete a candidate", ok(ref("Ok")), params=[p("id", "pending id")], role="write")},
  "/v1/forget": {"post": op("Delete a subject, an episode or the tenant for real", ok(ref("Receipt")), body=obj({"subject": S, "episode_id": S, "all": {"type": "boolean"}}), role="admin")},
  "/v1/receipts": {"get": op("The tenant's forget and expiry receipts", ok(obj({"receipts": {"type": "array", "items": ref("Receipt")}})), role="admin")},
  "/v1/schema": {"get": op("The schema in force for the key's tenant: its own (tenant), or the store default (store_default)", ok(ref("SchemaVersion"))),
                 "post": op("Apply a schema file as the next version of the key's tenant's schema", ok(ref("SchemaVersion")), params=[q("dry_run", "true: only return the diff", "boolean")], role="admin", raw={"application/yaml": {"schema": {"type": "string"}}, "application/json": {"schema": {"type": "object"}}})},
  "/v1/replay": {"post": op("Run a JSONL replay script within the caller's tenant", ok(obj({"lines": {"type": "integer"}, "failed": {"type": "integer"}, "results": {"type": "array", "items": {"type": "object"}}})), role="admin", raw={"application/x-ndjson": {"schema": {"type": "string"}}})},
  "/mcp": {"post": op("Model Context Protocol, streamable HTTP (stateless, JSON responses): the MCP tools bound to the key's tenant and role; see docs/mcp.md", ok({"type": "object", "description": "a JSON-RPC 2.0 response"}), role="read", raw={"application/json": {"schema": {"type": "object", "description": "a JSON-RPC 2.0 request"}}})},
 },
}
print(json.dumps(doc, indent=2))
