"""Sessions exported for people and other tools: Markdown, one JSON document, OpenTelemetry."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nodwyn import lazy

if TYPE_CHECKING:
    from nodwyn.export.document import session_document
    from nodwyn.export.markdown import session_markdown
    from nodwyn.export.otel import otlp_json, otlp_protobuf, spans
    from nodwyn.export.send import post_otlp

__all__ = ["otlp_json", "otlp_protobuf", "post_otlp", "session_document", "session_markdown", "spans"]

__getattr__ = lazy(__name__, {
    "document": "session_document", "markdown": "session_markdown", "otel": "otlp_json otlp_protobuf spans",
    "send": "post_otlp",
})  # fmt: skip
