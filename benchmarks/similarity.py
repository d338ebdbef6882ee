"""Benchmark: the similarity check on a synthetic class (time and memory), and whether its planted copies are found.

Each student's file of each exercise is the reference or a corpus variant with random edits (renamed locals, a
statement added, numbers changed, reformatted), so that honest students differ as real ones do; ``--copies`` students
hand in a disguised copy (tests/grader/corpus/disguise.py) of a classmate's file.

    python benchmarks/similarity.py --students 1000 --copies 20
"""
from __future__ import annotations

import argparse
import random
import re
import resource
import sys
import time

from grader import ROOT
from grader.course import course
from grader.similarity import compare_class
from grader.similarity.report import render

sys.path.insert(0, str(ROOT / "tests" / "grader" / "corpus"))
from disguise import disguise  # noqa: E402
from variants import VARIANTS  # noqa: E402


def _edited(source: str, rng: random.Random, salt: str) -> str:
    """``source`` as one more student might write it: some numbers changed, statements of their own added (about
    every other line), half the time renamed, reordered and reformatted."""
    lines = []
    for line in source.splitlines():
        if rng.random() < 0.15:
            line = re.sub(r"\b(\d+)\b", lambda m: str(rng.randrange(10**4)), line)
        lines.append(line)
        body = re.match(r"(\s+)(return |raise |if |for |with |def |class )", line)
        if body is None and line.startswith("    ") and not line.strip().startswith(('"', "#")) \
                and line.rstrip().endswith(")") and rng.random() < 0.5:
            indent = re.match(r"\s*", line)[0]  # a statement of this student's own (its numbers survive renaming)
            lines.append(f"{indent}check = {rng.choice(['abs', 'int', 'float'])}({rng.randrange(10**4)})")
    text = "\n".join(lines) + "\n"
    try:
        return disguise(text, salt) if rng.random() < 0.5 else text
    except SyntaxError:
        return text


def synthetic_class(students: int, copies: int, seed: int = 0) -> tuple[dict[str, dict[str, str]], set]:
    rng = random.Random(seed)
    choices = {m: [(ROOT / "solutions" / f"{m}.py").read_text(encoding="utf-8")]
               + [v.source() for v in VARIANTS if v.module == m] for m in course().modules}
    klass = {f"s{n:04d}": {m: _edited(rng.choice(choices[m]), rng, f"v{n}") for m in course().modules} for n in range(students)}
    planted = set()
    drawn = rng.sample(sorted(klass), 2 * copies)  # copiers and originals apart: nobody copies a copy
    for copier, original in zip(drawn[:copies], drawn[copies:]):
        module = rng.choice(["qkv", "dictionary", "causal", "multihead"])
        klass[copier][module] = disguise(klass[original][module], f"copy{copier}")
        planted.add((module, *sorted((copier, original))))
    return klass, planted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--students", type=int, default=1000)
    parser.add_argument("--copies", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    klass, planted = synthetic_class(args.students, args.copies, args.seed)
    files = sum(len(f) for f in klass.values())
    characters = sum(len(t) for f in klass.values() for t in f.values())
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    start = time.perf_counter()
    report = compare_class(klass)
    compared = time.perf_counter() - start
    page = render(report)
    rendered = time.perf_counter() - start - compared
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    flagged = {(m, p.a, p.b) for m, pairs in report.pairs.items() for p in pairs}
    print(f"class: {args.students} students, {files} files, {characters / 2**20:.1f} MiB of code "
          f"(seed {args.seed})")
    print(f"compare: {compared:.1f} s; render similarity.html ({len(page) / 2**20:.1f} MiB): {rendered:.1f} s")
    print(f"memory: peak RSS {peak:.0f} MiB ({peak - before:.0f} MiB more than with the class generated)")
    print(f"flagged: {len(flagged)} pairs; planted copies found: {len(planted & flagged)} of {len(planted)}; "
          f"other pairs: {len(flagged - planted)}")


if __name__ == "__main__":
    main()
