"""Benchmark: whether the similarity check flags planted copies, padded and disguised, and leaves honest work alone;
then its time and memory on a synthetic class. With ``--against``, the same classes also go through another
checkout's check (the main branch before a change), side by side.

Planted copies: each correct file of the course's own corpus (examples/submissions/ada and the correct variants of
tests/grading/corpus, other styles of each exercise) of an exercise with enough code to be evidence, copied in each
way of tests/grading/corpus/padding.py (an unused line of numbers, unused assignments, a dead helper, ``if _DEBUG:``
blocks, a helper that runs, all at once) and by disguise.py (renamed, reordered, reformatted), alone and combined;
one class per way, holding the originals, the copies and the examples ben and cy. Every pair of a class but the
planted ones is honest: independent work in other styles.

Synthetic class: each student's file of each exercise is the reference or a corpus variant with edits of their own
(renamed locals, a call of their own added, numbers changed, reformatted), and ``--copies`` students hand in a copy
of a classmate's file, padded and disguised in one of the ways above.

    python benchmarks/similarity.py --students 1000 --copies 20 --against /tmp/base

Each checkout is measured in a new process that imports its ``grader`` (``--against``: e.g. ``git archive BASE |
tar -x -C /tmp/base``).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]  # this checkout: the classes are built from its corpus
sys.path.insert(0, str(HERE / "tests" / "grading" / "corpus"))
from disguise import disguise  # noqa: E402
from padding import PADDINGS, padded  # noqa: E402
from variants import VARIANTS  # noqa: E402

SUBSTANTIAL = ("scores", "qkv", "quiz", "dictionary", "causal", "multihead")  # enough code to be evidence
COPIED = ("qkv", "dictionary", "causal", "multihead")  # what the synthetic class's copiers copy


COPY_KINDS = ["disguise", *PADDINGS, *(f"disguised+{kind}" for kind in PADDINGS)]


def planted_copy(source: str, kind: str, salt: str) -> str:
    """``source`` copied the way ``kind`` names (``disguise``, or a kind of padding.padded)."""
    return disguise(source, salt) if kind == "disguise" else padded(source, kind, salt)


def padding_classes() -> dict[str, tuple[dict, list]]:
    """Kind of copy -> (class: student -> {module: source}, planted pairs as [module, a, b] with a < b)."""
    examples = HERE / "examples" / "submissions"
    honest = {student: {path.stem: path.read_text(encoding="utf-8") for path in (examples / student).rglob("*.py")}
              for student in ("ada", "ben", "cy")}
    originals = [("ada", module, honest["ada"][module]) for module in SUBSTANTIAL]
    for variant in VARIANTS:
        if variant.kind == "correct":
            honest[variant.id] = {variant.module: variant.source()}  # names repeat across exercises, ids do not
            if variant.module in SUBSTANTIAL:
                originals.append((variant.id, variant.module, variant.source()))
    classes = {}
    for kind in COPY_KINDS:
        klass, planted = {student: dict(files) for student, files in honest.items()}, []
        for number, (student, module, source) in enumerate(originals):
            copier = f"copy-{module}-{student}"
            klass[copier] = {module: planted_copy(source, kind, f"c{number}")}
            planted.append([module, *sorted((student, copier))])
        classes[kind] = klass, planted
    return classes


def _edited(source: str, rng: random.Random, salt: str) -> str:
    """``source`` as one more student might write it: some numbers changed, calls of their own added (about every
    other line), half the time renamed, reordered and reformatted."""
    lines = []
    for line in source.splitlines():
        if rng.random() < 0.15:
            line = re.sub(r"\b(\d+)\b", lambda m: str(rng.randrange(10**4)), line)
        lines.append(line)
        body = re.match(r"(\s+)(return |raise |if |for |with |def |class )", line)
        if body is None and line.startswith("    ") and not line.strip().startswith(('"', "#")) \
                and line.rstrip().endswith(")") and rng.random() < 0.5:
            indent = re.match(r"\s*", line)[0]  # a statement of this student's own that runs (numbers survive renaming)
            lines.append(f"{indent}print({rng.choice(['abs', 'int', 'float'])}({rng.randrange(10**4)}))")
    text = "\n".join(lines) + "\n"
    try:
        return disguise(text, salt) if rng.random() < 0.5 else text
    except SyntaxError:
        return text


def synthetic_class(students: int, copies: int, seed: int = 0) -> tuple[dict[str, dict[str, str]], list]:
    rng = random.Random(seed)
    modules = sorted({variant.module for variant in VARIANTS})
    choices = {m: [(HERE / "solutions" / f"{m}.py").read_text(encoding="utf-8")]
               + [v.source() for v in VARIANTS if v.module == m] for m in modules}
    klass = {f"s{n:04d}": {m: _edited(rng.choice(choices[m]), rng, f"v{n}") for m in modules} for n in range(students)}
    planted = []
    drawn = rng.sample(sorted(klass), 2 * copies)  # copiers and originals apart: nobody copies a copy
    for copier, original in zip(drawn[:copies], drawn[copies:]):
        module = rng.choice(COPIED)
        try:
            klass[copier][module] = planted_copy(klass[original][module], rng.choice(COPY_KINDS), copier)
        except SyntaxError:  # an edit broke the file: the copy is verbatim
            klass[copier][module] = klass[original][module]
        planted.append([module, *sorted((copier, original))])
    return klass, planted


def measure(classes_file: str) -> None:
    """In the process of the checkout measured: each class's flagged pairs, files compared, CPU seconds to compare
    and to render similarity.html (other users of a shared machine disturb them less than wall time), and peak
    memory; as JSON on stdout."""
    from grader.similarity import compare_class
    from grader.similarity.report import render

    classes = json.loads(Path(classes_file).read_text(encoding="utf-8"))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    results = {}
    for name, klass in classes.items():
        start = time.process_time()
        report = compare_class(klass)
        compared = time.process_time() - start
        page = render(report)
        results[name] = {"flagged": [[m, p.a, p.b] for m, pairs in report.pairs.items() for p in pairs],
                         "compared": report.compared, "compare_s": compared,
                         "render_s": time.process_time() - start - compared, "page_mib": len(page) / 2**20,
                         "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                         "loaded_mib": before}
    print(json.dumps(results))


def run_checkout(checkout: Path, classes_file: Path) -> dict:
    """``measure`` in a new process importing ``checkout``'s grader."""
    done = subprocess.run([sys.executable, __file__, "--measure", str(classes_file)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(checkout)}, cwd=checkout, check=True)
    return json.loads(done.stdout)


def tally(result: dict, planted: list) -> tuple[int, int, int]:
    """(planted pairs flagged, honest pairs flagged, honest pairs compared)."""
    flagged = {tuple(pair) for pair in result["flagged"]}
    planted = {tuple(pair) for pair in planted}
    pairs = sum(n * (n - 1) // 2 for n in result["compared"].values())
    return len(flagged & planted), len(flagged - planted), pairs - len(planted)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--students", type=int, default=1000)
    parser.add_argument("--copies", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--against", type=Path, help="another checkout, measured the same way (e.g. main before a "
                        "change: `git archive BASE | tar -x -C /tmp/base`)")
    parser.add_argument("--measure", help=argparse.SUPPRESS)  # the child process: measure a file of classes
    args = parser.parse_args()
    if args.measure:
        return measure(args.measure)
    classes = padding_classes()
    synthetic = f"synthetic class of {args.students} ({args.copies} copies)"
    classes[synthetic] = synthetic_class(args.students, args.copies, args.seed)
    checkouts = {"this checkout": HERE, **({f"against ({args.against.name})": args.against.resolve()}
                                           if args.against else {})}
    with tempfile.TemporaryDirectory() as scratch:
        classes_file = Path(scratch) / "classes.json"
        classes_file.write_text(json.dumps({name: klass for name, (klass, _) in classes.items()}), encoding="utf-8")
        results = {label: run_checkout(checkout, classes_file) for label, checkout in checkouts.items()}
    labels = list(reversed(results))  # against (before) first, then this checkout
    print("| copies | " + " | ".join(f"planted flagged, {label}" for label in labels) + " | "
          + " | ".join(f"honest pairs flagged, {label}" for label in labels) + " |")
    print("| --- " * (1 + 2 * len(labels)) + "|")
    for name, (_, planted) in classes.items():
        counts = [tally(results[label][name], planted) for label in labels]
        print(f"| {name} | " + " | ".join(f"{found} / {len(planted)}" for found, _, _ in counts) + " | "
              + " | ".join(f"{honest} / {total}" for _, honest, total in counts) + " |")
    files = sum(len(f) for f in classes[synthetic][0].values())
    characters = sum(len(t) for f in classes[synthetic][0].values() for t in f.values())
    print(f"\n{synthetic}: {files} files, {characters / 2**20:.1f} MiB of code (seed {args.seed})")
    for label in labels:
        result = results[label][synthetic]
        print(f"{label}: compare {result['compare_s']:.1f} s CPU; render similarity.html ({result['page_mib']:.1f} "
              f"MiB) {result['render_s']:.1f} s CPU; peak RSS {result['peak_mib']:.0f} MiB "
              f"({result['peak_mib'] - result['loaded_mib']:.0f} MiB more than with the classes loaded)")


if __name__ == "__main__":
    main()
