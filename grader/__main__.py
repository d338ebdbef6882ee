"""`python -m grader`: the command line (grader.cli)."""
from grader.cli import script

if __name__ == "__main__":
    script()
