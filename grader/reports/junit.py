"""JUnit XML, for any CI: one testsuite per exercise (its points as properties), one testcase per hidden test."""
from __future__ import annotations

import xml.etree.ElementTree as ET

from grader.points import Grade
from grader.text import MAX_NAME, clean


def junit_xml(grade: Grade, *, name: str = "grade", execution_time: float = 0.0) -> str:
    """JUnit XML: a testsuite per exercise (its points as properties), a testcase per hidden test.

    A failed test carries its feedback as ``<failure message=...>``; a test that does not apply here is ``<skipped>``.
    Every text is ``clean``: no character XML refuses; ElementTree escapes the markup.
    """
    def count(tests, status):
        return str(sum(t.status == status for t in tests))

    root = ET.Element("testsuites", name=clean(name, MAX_NAME), tests=str(len(grade.tests)),
                      failures=count(grade.tests, "failed"),
                      errors="0", skipped=count(grade.tests, "skipped"), time=f"{execution_time:.3f}")
    for exercise in grade.exercises:
        suite = ET.SubElement(root, "testsuite", name=exercise.module, tests=str(len(exercise.tests)),
                              failures=count(exercise.tests, "failed"), errors="0",
                              skipped=count(exercise.tests, "skipped"), time="0")
        properties = ET.SubElement(suite, "properties")
        for key, value in (("title", exercise.title), ("score", f"{exercise.score:g}"),
                           ("max_score", f"{exercise.max_score:g}"), ("problem", exercise.problem)):
            if value:
                ET.SubElement(properties, "property", name=key, value=clean(value))
        seen: dict[str, int] = {}
        for test in exercise.tests:
            params = test.name[test.name.index("["):] if test.name.endswith("]") and "[" in test.name else ""
            label = clean(f"{test.doc} {params}".strip())
            seen[label] = seen.get(label, 0) + 1
            if seen[label] > 1:
                label = f"{label} ({seen[label]})"
            case = ET.SubElement(suite, "testcase", classname=exercise.module, name=label, time="0")
            case_properties = ET.SubElement(case, "properties")
            ET.SubElement(case_properties, "property", name="score", value=f"{test.score:g}")
            ET.SubElement(case_properties, "property", name="max_score", value=f"{test.max_score:g}")
            feedback = clean(test.feedback)
            if test.status == "failed":
                failure = ET.SubElement(case, "failure", message=feedback or clean(test.doc), type="failed")
                failure.text = feedback
            elif test.status == "skipped":
                ET.SubElement(case, "skipped", message=feedback or "does not apply here")
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
