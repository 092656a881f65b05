"""Replay: exact replay proven by the recorded digest, the transcript of any log, reviewed
summaries. It reads only the log (README.md)."""
