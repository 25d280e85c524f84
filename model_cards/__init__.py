"""Model cards: jinja2 templates rendered into a Hub README for converted packages (issue 4)."""
