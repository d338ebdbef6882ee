"""The command line's errors and help: each error names what went wrong where it went wrong, and what to do."""
from __future__ import annotations

from types import SimpleNamespace

from grader import ROOT, cli
from grader.cli import GRADER_FAULT_STATUS


def test_a_file_missing_while_grading_is_a_grader_fault_not_a_write_error(tmp_path, monkeypatch, capsys):
    """An OSError while grading (a file of the course the grader could not read) is a grader fault naming that file;
    it used to be reported as "cannot write results.json: No such file or directory"."""
    import grader.grade

    missing = tmp_path / "course" / "tests" / "course" / "pytest.ini"

    def unreadable(*args, **kwargs):
        raise FileNotFoundError(2, "No such file or directory", str(missing))

    monkeypatch.setattr(grader.grade, "grade_submission", unreadable)
    out = tmp_path / "r.json"
    assert cli.main(["grade", str(ROOT / "solutions"), "--out", str(out)]) == GRADER_FAULT_STATUS
    error = capsys.readouterr().err
    assert "grader fault while grading" in error and str(missing) in error and "cannot write" not in error, error
    assert not out.exists()


def test_results_that_cannot_be_written_say_so(tmp_path, monkeypatch, capsys):
    """A results.json that cannot be written (``--out`` names a folder) is reported as that: no score is given."""
    import grader.grade

    monkeypatch.setattr(grader.grade, "grade_submission", lambda *args, **kwargs: SimpleNamespace(results={"score": 1}))
    assert cli.main(["grade", str(ROOT / "solutions"), "--out", str(tmp_path)]) == GRADER_FAULT_STATUS
    assert capsys.readouterr().err.strip() == f"grader: cannot write {tmp_path}: Is a directory"
    assert list(tmp_path.iterdir()) == []
