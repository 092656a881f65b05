"""Other agents' runs read into neutral conversations (``Run``), and written as imported sessions.

``find(path)`` lists the runs under a file or folder, ``load(found)`` reads one into a ``Run``
(system prompt, tool catalog, messages as the model saw them before each of its replies). One
module per format: ``mini_v1``, ``mini_v2``, ``sweagent``, ``openhands``. A file a loader cannot
read raises ``nodwyn.errors.ImportFormatError`` naming the file and field.
"""

from nodwyn.imports.discover import Found, find, load, load_all
from nodwyn.imports.run import Run, Sent, Stand
from nodwyn.imports.session import Source, conversation, imported_sessions, observed, source_of, write

__all__ = [
    "Found", "Run", "Sent", "Source", "Stand", "conversation", "find", "imported_sessions", "load",
    "load_all", "observed", "source_of", "write",
]  # fmt: skip
