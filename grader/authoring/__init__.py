"""Authoring tools, beside the pipeline: exercises/ from solutions/ (stubs), the nbgrader course from the exercises'
lessons (lessons, notebooks) and the students' handout and Gradescope autograder (release)."""
