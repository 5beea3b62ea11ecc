"""Who may do what: bearer tokens with roles, and per-caller rate limits."""
