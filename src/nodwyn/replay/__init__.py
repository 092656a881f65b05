"""Replay: exact replay of a request, proven by its recorded digest (``exact``), the transcript
of any log (``transcript``), and reviewed summaries added to and revoked from a closed session
(``summaries``). Replay reads only the log; it never reads the configuration or extension files
and never runs a model or a tool.
"""
