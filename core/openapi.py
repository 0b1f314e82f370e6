"""What the generated OpenAPI document would otherwise leave out (drf-spectacular hooks)."""

from __future__ import annotations

from typing import Any

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def document_refused_methods(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """Every operation may be answered 405 (a method its path does not take), with an `Allow`
    header naming the methods it does take."""
    for item in result.get("paths", {}).values():
        allowed = ", ".join(sorted(m.upper() for m in item if m in METHODS))
        for method, operation in item.items():
            if method not in METHODS:
                continue
            operation["responses"].setdefault(
                "405",
                {
                    "description": "A method the path does not take (`method_not_allowed`).",
                    "headers": {
                        "Allow": {
                            "description": "The methods the path takes.",
                            "schema": {"type": "string", "enum": [allowed]},
                        }
                    },
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/Error"}}
                    },
                },
            )
    return result


def require_request_bodies(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """Every request body the document describes is required: each endpoint that takes one
    answers 400 to a request without it (drf-spectacular leaves `required` off a body whose
    members are all optional)."""
    for item in result.get("paths", {}).values():
        for method, operation in item.items():
            if method in METHODS and "requestBody" in operation:
                operation["requestBody"]["required"] = True
    return result
