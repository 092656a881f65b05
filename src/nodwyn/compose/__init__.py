"""Composition, above the agent: the config file, extension files, the probe of a model entry, and
``setup.open_agent``, which puts a session's log, window, tools and backends together into an
``Agent``."""
