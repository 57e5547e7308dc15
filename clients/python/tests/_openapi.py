"""The OpenAPI document, for validating what the kit sends and what the tests answer.

The document is read from $RERUN_GATE_OPENAPI (written by `make test` from the server) and falls back to the copy
in this directory (tests/openapi.json, copied from the server's GET /api/openapi.json).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012


HERE = Path(__file__).resolve().parent
URI = "urn:rerun-gate:openapi"


def document_path() -> tuple[Path, str]:
    env = os.environ.get("RERUN_GATE_OPENAPI")
    if env:
        return Path(env), "RERUN_GATE_OPENAPI"
    return HERE / "openapi.json", "the copy in tests/openapi.json"


def _pointer(*parts: str) -> str:
    return "/" + "/".join(p.replace("~", "~0").replace("/", "~1") for p in parts)


class OpenApi:
    """Validation against the document, as the server serves it."""

    def __init__(self, doc: dict[str, Any], source: str) -> None:
        self.doc = doc
        self.source = source
        wire = doc
        enum = wire.get("components", {}).get("schemas", {}).get("ErrorClass", {}).get("enum")
        self.error_class_enum: list[str] = list(enum or [])
        self.wire = wire
        self.registry: Registry[Any] = Registry().with_resource(
            URI, Resource.from_contents(wire, default_specification=DRAFT202012)
        )
        self._templates: list[tuple[re.Pattern[str], str]] = []
        for template in wire.get("paths", {}):
            regex = "^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(template)) + "$"
            self._templates.append((re.compile(regex), template))

    @classmethod
    def load(cls) -> "OpenApi":
        path, source = document_path()
        with open(path, encoding="utf-8") as f:
            return cls(json.load(f), f"{source} ({path})")

    def has(self, *parts: str) -> bool:
        node: Any = self.wire
        for p in parts:
            if not isinstance(node, dict) or p not in node:
                return False
            node = node[p]
        return True

    def errors(self, instance: Any, *parts: str) -> list[str]:
        validator = Draft202012Validator({"$ref": URI + "#" + _pointer(*parts)}, registry=self.registry)
        return [
            f"{'/'.join(str(p) for p in e.absolute_path) or '(root)'}: {e.message}"
            for e in sorted(validator.iter_errors(instance), key=lambda e: list(map(str, e.absolute_path)))
        ]

    def validate(self, instance: Any, *parts: str) -> None:
        problems = self.errors(instance, *parts)
        if problems:
            raise ValidationError(f"not valid against {'/'.join(parts)}: " + "; ".join(problems))

    def schema(self, name: str) -> tuple[str, ...]:
        return ("components", "schemas", name)

    def template(self, path: str) -> str | None:
        for regex, template in self._templates:
            if regex.match(path):
                return template
        return None

    def request_schema(self, method: str, path: str) -> tuple[str, ...] | None:
        template = self.template(path)
        if template is None:
            return None
        parts = ("paths", template, method.lower(), "requestBody", "content", "application/json", "schema")
        return parts if self.has(*parts) else None

    def required_headers(self, method: str, path: str) -> list[str]:
        template = self.template(path)
        if template is None:
            return []
        op = self.wire["paths"][template].get(method.lower(), {})
        return [p["name"] for p in op.get("parameters", []) if p.get("in") == "header" and p.get("required")]

    def response_schema(self, method: str, path: str, status: int, content_type: str) -> tuple[str, ...] | None:
        template = self.template(path)
        if template is None:
            return None
        responses = ("paths", template, method.lower(), "responses")
        code = str(status)
        if not self.has(*responses, code):
            code = "default"
            if not self.has(*responses, code):
                return None
        parts = (*responses, code, "content", content_type, "schema")
        return parts if self.has(*parts) else None

    def operation_known(self, method: str, path: str) -> bool:
        template = self.template(path)
        return template is not None and method.lower() in self.wire["paths"][template]

    def documented_statuses(self, method: str, path: str) -> list[str]:
        template = self.template(path)
        if template is None:
            return []
        return list(self.wire["paths"][template].get(method.lower(), {}).get("responses", {}))

    # The rerun call (Rerun Gate -> integration), once the document has a `webhooks` section.

    def rerun_webhook(self) -> tuple[str, ...] | None:
        hooks = self.wire.get("webhooks")
        if not isinstance(hooks, dict) or not hooks:
            return None
        name = "rerunApproved" if "rerunApproved" in hooks else next(iter(hooks))
        for method in ("post", "put"):
            if method in hooks[name]:
                return ("webhooks", name, method)
        return None
