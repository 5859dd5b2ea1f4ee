"""``agentkit report``: one self-contained HTML file (inline CSS and SVG, no script, no network)."""
