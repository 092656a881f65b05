"""Transports: HTTP model servers (``http.HttpBackend``), credentials bound to origins, the local model."""
