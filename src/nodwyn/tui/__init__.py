"""The terminal UI (``nodwyn tui``; ``nodwyn`` alone on a terminal): a Textual face over the same
library as the CLI. See README.md beside this file and docs/tui.md."""
