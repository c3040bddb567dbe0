"""Base floor: paths and settings, the 26 items, tokens, checklist values."""
