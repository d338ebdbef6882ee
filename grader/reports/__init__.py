"""Reports: one in-memory ``points.Grade`` (or a student's results.json), written in every format a host reads.

One module per host format or report:

* ``results``: results.json, Gradescope's format plus a few fields of ours (``RESULTS_SCHEMA``,
  ``GRADESCOPE_SCHEMA``), each test's visibility from course.yaml's rules (``visibility_of``); for Gradescope,
  for `grader grade` and for batch (one per student);
* ``prairielearn``: PrairieLearn's external-grader results.json (score 0..1), for PrairieLearn;
* ``classroom``: the GitHub Classroom autograding result (``classroom_output``: the ``result`` output of a
  runner step, base64 JSON read by Classroom's grading reporter);
* ``junit``: JUnit XML, one testsuite per exercise, for any CI;
* ``github``: every output of `grader ci` in GitHub Actions (job summary, step outputs, workflow commands and
  annotations, the score line), for the student's Actions run;
* ``markdown``: the job summary (a table of exercises and points, then what to fix);
* ``terminal``: the summary printed after a grading;
* ``feedback``: a student's feedback page, Markdown and HTML, written by batch;
* ``gradebook``: the class's gradebook.csv, for the instructor, written by batch;
* ``summary``: the class's summary.html (where the class struggles) with its pictures (``plots``), written by batch;
* ``page``: the HTML page feedback and summary share (style, print style);
* ``advice``: the words every report shares (points to two decimals, score line, what to fix, the line feedback
  names, stubs left);
* ``files``: atomic writes (``write_atomic``, ``write_json``).

None shows suite code, reference code or hidden values (the only text per test is the feedback written for the
student); every student string is cleaned and escaped for its format (``grader.text``).
"""
