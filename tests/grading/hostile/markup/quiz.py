"""Hostile: a message (and a line of code) full of terminal escapes and rich markup, to forge or break the grader's
terminal output. Raised at import: the one failure whose message and line the feedback shows."""

PARAMS = {}
NASTY = ("[/bold][/][link=file:///etc/passwd]click[/link] \x1b[2J\x1b[H\x1b]0;owned\x07 FAKE quiz 10/10 \r"
         "[bold green]ALL TESTS PASSED[/] \u202eevil\u202c")


class Nasty(RuntimeError):
    pass


raise Nasty(NASTY)  # [/bold][/][link=file:///etc/passwd]click[/link] [2J]0;owned FAKE quiz 10/10 [bold green]ALL TESTS PASSED[/] ‮evil‬
