"""Your implementations: fill in each stub, then run `python -m pytest tests/public`."""
