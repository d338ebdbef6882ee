"""`python -m grader`: the command line (grader.cli)."""
from grader.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
