"""The suites, the third stage: the hidden pytest suites run against a submission through a pytest plugin, and the
machinery they are written with (``checks``: value checks; ``contract``: the rules every exercise keeps; ``cases``:
drawing and replaying cases; ``variants``: the variants that prove a suite; ``public/``: diagnosis, the stub's
message and the public checks' set-up, shipped in the handout and importable by their plain names, ``grader.PUBLIC``).
"""
from grader import PUBLIC  # noqa: F401 (the suites' name for it)
