"""Intake, the first stage: a submission (folder, .zip, notebook, nbgrader folder) becomes a private folder of
``<module>.py`` files, read within caps in a child process; nothing of it is imported or run here."""


class IntakeError(ValueError):
    """The submission cannot be graded at all (the message is one line, for the student). ``cpu_seconds``: the CPU
    time reading it took (a batch charges it to the student's reading time)."""

    cpu_seconds = 0.0


class IntakeTimeout(IntakeError):
    """Reading the submission ran past its time limit."""


class IntakeFault(RuntimeError):
    """Reading a submission failed for a reason of the grader's own (a bug, a child that could not start)."""
