"""drf-spectacular's post-processing: the refusals every operation may answer, declared in the schema (each one the
api/errors.py shape, ``Error``), so that a client generated from the schema knows them and the suite's check of every
response against the served schema (tests/site/api/schema_check.py) holds for refusals as well as successes."""

from __future__ import annotations

# Why each may come from any operation: the token is read (401) and the rate limits counted (429) on every request;
# a path with an id names something that may not exist or not be yours (404); any other method (405), an Accept the
# API does not render (406), a body too large (413) or of another type (415), a bad parameter (400); an action that is
# not the caller's to take, or a token without its scope (403).
REFUSALS = {
    "400": "a query parameter, field or upload is not valid (errors says which)",
    "401": "no token where one is needed, or a token that is not valid (revoked, expired, unknown)",
    "403": "not yours to do, or the token lacks the scope (read, submit)",
    "404": "no such object (or not visible to the caller)",
    "405": "this method is not allowed here",
    "406": "the Accept header asks for a format the API does not render",
    "413": "the request body is over the site's limits",
    "415": "the body's media type is not one this operation reads",
    "429": "a quota or the rate limit is spent (next_free_at: when a slot frees, where known)",
}
ERROR = {
    "type": "object",
    "required": ["detail"],
    "properties": {
        "detail": {"type": "string"},
        "errors": {"description": "per field (a dict) or per file (a list), where given"},
        "next_free_at": {"type": "string", "format": "date-time", "nullable": True},
    },
}


def declare_refusals(result, generator, request, public):
    components = result.setdefault("components", {}).setdefault("schemas", {})
    components.setdefault("Error", ERROR)
    ref = {"$ref": "#/components/schemas/Error"}
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.setdefault("responses", {})
            for code, why in REFUSALS.items():
                responses.setdefault(code, {"description": why, "content": {"application/json": {"schema": ref}}})
    return result
