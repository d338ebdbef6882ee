"""The instructor's records beside the grades, applied when the reports are written, never to a graded record.

* ``table``: reading an instructor's CSV file (one-line errors naming the file and line) and its times;
* ``roster``: the class list (ours, nbgrader's, GitHub Classroom's), so that the gradebook shows who is missing;
* ``overrides``: points set or taken away by hand, per student, exercise or check, with a reason;
* ``late``: submission times (the instructor's list, nbgrader's timestamp.txt, a zip's newest entry) and the
  course's late penalty (course.yaml's ``late``);
* ``adjust``: all of it on top of the graded results: the class's rows as every report shows them.

A regrade replaces a graded record; the records above are applied again to the new one, so they survive it.
"""
