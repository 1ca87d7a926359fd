"""Agent Agency: agents that improve themselves from their own recorded work."""

__version__ = "0.1.0"
