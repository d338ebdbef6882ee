"""Pairs of alike files of one exercise: k-gram fingerprints, winnowing, an inverted index, then an exact score.

Every ``K`` consecutive normalized symbols of a unit (``tokens.normalize``) make a k-gram, hashed deterministically.
Winnowing (Schleimer, Wilkerson and Aiken 2003, the algorithm of MOSS) keeps the smallest hash of every ``WINDOW``
consecutive k-grams: two files that share a run of ``K + WINDOW - 1`` symbols share a kept fingerprint. An inverted
index of the kept fingerprints yields the candidate pairs without comparing all pairs; only candidates get the exact
score, the containment of the smaller set of k-grams in the other, ``|A ∩ B| / min(|A|, |B|)``: code added to one
side (padding a copy) lowers no score. K-grams that more than ``common_limit`` files of the class share (textbook
lines, what the exercise dictates) count for nobody, as in MOSS.
"""
from __future__ import annotations

import math
import zlib
from collections import Counter, defaultdict
from dataclasses import dataclass

from grader.similarity.tokens import Normalized

K = 12  # symbols per k-gram: about one line of code
WINDOW = 8  # winnowing window: a shared run of K + WINDOW - 1 = 19 symbols is always seen
THRESHOLD = 0.85  # score from which a pair is flagged (see docs/similarity.md for the calibration)
MIN_SHARED = 40  # shared k-grams a flagged pair needs at least: alike one-liners of a tiny exercise are no evidence
MIN_UNCOMMON = 20  # of which at least this many not common to the class (two or three lines of their own)
COMMON_SHARE, COMMON_FLOOR = 0.05, 10  # a k-gram in more than max(10, 5% of the files) is common to the class
MAX_POSITIONS = 8  # occurrences of one k-gram followed when matching fragments (repeated code)
_MODULUS, _BASE = (1 << 61) - 1, 1_000_003


@dataclass(frozen=True)
class Fragment:
    """A run of matching code: lines ``a_lines`` of the first file match lines ``b_lines`` of the second."""

    a_lines: tuple[int, int]
    b_lines: tuple[int, int]
    symbols: int  # normalized symbols the run covers


@dataclass(frozen=True)
class Pair:
    """Two files of one exercise alike enough to be looked at (``a`` < ``b``)."""

    exercise: str
    a: str
    b: str
    score: float  # containment of the smaller file's k-grams in the other's, 0..1
    shared: int  # k-grams in common, less those common to the class
    fragments: tuple[Fragment, ...]
    units: tuple[tuple[str, str, float], ...]  # (function of a, its closest function of b, their score)


@dataclass
class _File:
    """One student's file: its k-gram hashes, (unit, offset) of each, their set, and that set less the class's
    common k-grams."""

    normalized: Normalized
    hashes: list[int]
    places: list[tuple[int, int]]
    every: set[int]
    kept: set[int]
    fingerprints: set[int]


_symbol_hashes: dict[str, int] = {}


def _symbol_hash(symbol: str) -> int:
    value = _symbol_hashes.get(symbol)
    if value is None:
        value = _symbol_hashes.setdefault(symbol, zlib.crc32(symbol.encode("utf-8", "surrogatepass")) + 1)
    return value


def kgrams(normalized: Normalized) -> tuple[list[int], list[tuple[int, int]]]:
    """The hash of every k-gram of every unit (a polynomial rolling hash), and each one's (unit, first symbol)."""
    hashes, places = [], []
    top = pow(_BASE, K - 1, _MODULUS)
    for index, unit in enumerate(normalized.units):
        values = [_symbol_hash(s) for s in unit.symbols]
        if len(values) < K:
            continue
        value = 0
        for symbol in values[:K]:
            value = (value * _BASE + symbol) % _MODULUS
        hashes.append(value)
        places.append((index, 0))
        for start in range(1, len(values) - K + 1):
            value = ((value - values[start - 1] * top) * _BASE + values[start + K - 1]) % _MODULUS
            hashes.append(value)
            places.append((index, start))
    return hashes, places


def winnow(hashes: list[int], places: list[tuple[int, int]]) -> set[int]:
    """The fingerprints winnowing keeps: the smallest hash of each window of ``WINDOW`` k-grams of one unit."""
    kept = set()
    start = 0
    while start < len(hashes):
        end = start
        while end < len(hashes) and places[end][0] == places[start][0]:
            end += 1
        unit = hashes[start:end]
        if len(unit) <= WINDOW:
            kept.add(min(unit))
        else:
            kept.update(min(unit[i:i + WINDOW]) for i in range(len(unit) - WINDOW + 1))
        start = end
    return kept


def containment(shared: int, a: int, b: int) -> float:
    """The share of the smaller of two sets (sizes ``a`` and ``b``) that the ``shared`` elements make: 1 when one
    holds the other whole, however much the other adds."""
    return shared / min(a, b) if shared else 0.0


def common_limit(files: int) -> int:
    """A k-gram in more files than this is common to the class and counts for nobody."""
    return max(COMMON_FLOOR, math.ceil(COMMON_SHARE * files))


def similar_pairs(exercise: str, files: dict[str, Normalized], threshold: float = THRESHOLD,
                  min_shared: int = MIN_SHARED) -> list[Pair]:
    """The pairs of ``files`` (student -> normalized file) scoring at least ``threshold``, with at least
    ``min_shared`` k-grams in common (``MIN_UNCOMMON`` of them not common to the class), best first (ties by ids)."""
    prepared: dict[str, _File] = {}
    frequency: Counter[int] = Counter()
    for student in sorted(files):
        hashes, places = kgrams(files[student])
        every = set(hashes)
        frequency.update(every)
        prepared[student] = _File(files[student], hashes, places, every, set(), set())
    limit = common_limit(len(files))
    common = {value for value, count in frequency.items() if count > limit}
    index: dict[int, list[str]] = defaultdict(list)
    for student, file in prepared.items():
        file.kept = file.every - common
        file.fingerprints = winnow(file.hashes, file.places) - common
        for value in file.fingerprints:
            index[value].append(student)
    shared: Counter[tuple[str, str]] = Counter()
    for students in index.values():
        for i, a in enumerate(students):
            for b in students[i + 1:]:
                shared[a, b] += 1
    pairs = []
    for (a, b), count in shared.items():
        first, second = prepared[a], prepared[b]
        if containment(count, len(first.fingerprints), len(second.fingerprints)) < 0.5 * threshold:
            continue  # the fingerprints, a sample of the k-grams, rule it out
        together = len(first.kept & second.kept)
        score = containment(together, len(first.kept), len(second.kept))
        if score >= threshold and together >= MIN_UNCOMMON and len(first.every & second.every) >= min_shared:
            pairs.append(Pair(exercise, a, b, round(score, 4), together, fragments(first, second),
                              closest_units(first, second)))
    return sorted(pairs, key=lambda p: (-p.score, p.a, p.b))


def _span(file: _File, first: int, last: int) -> tuple[int, int, int]:
    """Source lines of k-grams ``first``..``last`` (consecutive in one unit) and the symbols they cover."""
    unit, start = file.places[first]
    lines = file.normalized.units[unit].lines
    end = file.places[last][1] + K - 1
    return min(lines[start:end + 1]), max(lines[start:end + 1]), end - start + 1


def fragments(a: _File, b: _File) -> tuple[Fragment, ...]:
    """The runs of consecutive k-grams of ``a`` that match consecutive k-grams of ``b``, longest first without
    overlapping in either file, then in the order of ``a``."""
    positions: dict[int, list[int]] = defaultdict(list)
    for j, value in enumerate(b.hashes):
        if value in a.kept and len(positions[value]) < MAX_POSITIONS:
            positions[value].append(j)
    runs: list[list[int]] = []  # [first of a, first of b, length]
    open_runs: dict[tuple[int, int], list[int]] = {}  # (next k-gram of a, of b) -> the run it would extend
    for i, value in enumerate(a.hashes):
        following = {}
        for j in positions.get(value, ()):
            run = open_runs.get((i, j))
            if run is None or a.places[i][0] != a.places[i - 1][0] or b.places[j][0] != b.places[j - 1][0]:
                run = [i, j, 0]
                runs.append(run)
            run[2] += 1
            following[i + 1, j + 1] = run
        open_runs = following
    taken_a: set[int] = set()
    taken_b: set[int] = set()
    chosen = []
    for i, j, length in sorted(runs, key=lambda r: (-r[2], r[0], r[1])):
        if taken_a.isdisjoint(range(i, i + length)) and taken_b.isdisjoint(range(j, j + length)):
            taken_a.update(range(i, i + length))
            taken_b.update(range(j, j + length))
            chosen.append((i, j, length))
    result = []
    for i, j, length in sorted(chosen):
        a_first, a_last, symbols = _span(a, i, i + length - 1)
        b_first, b_last, _ = _span(b, j, j + length - 1)
        result.append(Fragment((a_first, a_last), (b_first, b_last), symbols))
    return tuple(result)


def closest_units(a: _File, b: _File) -> tuple[tuple[str, str, float], ...]:
    """For each function (unit) of ``a`` that shares k-grams with ``b``: the unit of ``b`` it shares most with, and
    the score of the two: a reordered copy shows which function became which."""
    def unit_sets(file: _File) -> dict[int, set[int]]:
        sets: dict[int, set[int]] = defaultdict(set)
        for value, (unit, _) in zip(file.hashes, file.places):
            if value in file.kept:
                sets[unit].add(value)
        return sets

    a_units, b_units = unit_sets(a), unit_sets(b)
    closest = []
    for unit, values in sorted(a_units.items()):
        overlaps = [(len(values & other), -index) for index, other in b_units.items()]
        best, negative = max(overlaps, default=(0, 0))
        if best:
            other = b_units[-negative]
            closest.append((a.normalized.units[unit].name, b.normalized.units[-negative].name,
                            round(containment(best, len(values), len(other)), 4)))
    return tuple(closest)
