"""The generators of the docs' tables, by the results they read (``tools/gendocs.py`` runs them
with the files ``docs/results-index.toml`` names): each takes ``files`` (paths from the
repository root) or ``rows`` (the index's rows) and returns the table's Markdown."""
