"""``python -m twin`` runs the CLI."""

from twin.cli import entry

entry()
