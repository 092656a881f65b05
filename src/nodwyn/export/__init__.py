"""Sessions exported for people and other tools: Markdown, one JSON document, OpenTelemetry."""
