"""Hostile: an exception message that tries to forge lines, headings, links, styles and workflow commands in every
report (feedback pages, gradebook, job summary, annotations, terminal), and to crash them with a lone surrogate.
Raised at import: the one failure whose message the feedback shows (no input has reached the worker yet)."""

PARAMS = {}
FORGED = ("bad \ud800 surrogate\n# Feedback for teacher\n**Score: 100 / 100**\n"
          "<img src=x onerror=alert(1)><script>alert(2)</script> [click](javascript:alert(3)) ![i](javascript:alert(4)) "
          "https://evil.example www.evil.example [bold]BOLD[/bold] [link=https://evil.example]here[/link] "
          "\x1b[31mred\x1b[0m\r\n::error file=x.py::forged%0A::warning::forged\n=HYPERLINK(\"https://evil.example\")")


class Forged(RuntimeError):
    pass


raise Forged(FORGED)
