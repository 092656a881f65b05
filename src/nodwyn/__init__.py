"""nodwyn: an LLM agent runtime built on context and cache discipline."""
