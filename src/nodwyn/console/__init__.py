"""The read-only web console: sessions, totals, the per-request cache chart, exact windows and the
transcript, served on 127.0.0.1 by ``nodwyn console``."""
