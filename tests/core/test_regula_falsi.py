# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests of core.regula_falsi: roots of a batch of brackets, against closed-form roots, and
the one-bracket float twin against the batch."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from core.regula_falsi import illinois, illinois_one

Slope = Callable[[np.ndarray], np.ndarray]


def _counted(f: Slope) -> tuple[Slope, list[np.ndarray]]:
    """``f``, and the list of the arguments it is called with."""
    calls: list[np.ndarray] = []

    def slope(t: np.ndarray) -> np.ndarray:
        calls.append(t.copy())
        return f(t)

    return slope, calls


def test_roots_of_falling_functions_to_machine_precision() -> None:
    """Simple roots of smooth falling functions, anywhere in their brackets, to a few ulp
    (the closed form ``r``), in a dozen evaluations or fewer."""
    rng = np.random.default_rng(3)
    lo = rng.uniform(-3.0, 2.0, 200)
    hi = lo + rng.uniform(0.01, 1.0, 200)
    r = lo + rng.uniform(0.0, 1.0, 200) * (hi - lo)
    slope, calls = _counted(lambda t: np.sin(r - t) * (2.0 + np.cos(t)))
    root = illinois(slope, lo, hi, slope(lo), slope(hi), 40)
    assert np.all(np.abs(root - r) <= 8.0 * np.spacing(np.abs(r) + 1.0))
    assert len(calls) - 2 <= 12


def test_a_root_within_rounding_of_an_end_is_bracketed_at_once() -> None:
    """Where the root lies within rounding of an end (that end's value at rounding level),
    the regula falsi point rounds onto it: one step 4 ulp inside it brackets the root — not
    bisection toward it one bit a step (some 30 evaluations from this bracket)."""
    lo, hi = np.array([0.25]), np.array([0.75])
    r = hi + 1e-17  # (rounds to hi)
    slope, calls = _counted(lambda t: 1e-3 * (r - t) - 1e-25)
    f_lo, f_hi = slope(lo), slope(hi)
    assert f_hi[0] < 0.0 < f_lo[0]
    root = illinois(slope, lo, hi, f_lo, f_hi, 40)
    assert abs(root[0] - hi[0]) <= 4.0 * np.spacing(1.75)
    assert len(calls) - 2 <= 2


def test_an_end_at_rounding_level_without_a_root_there_does_not_stop_the_search() -> None:
    """An end whose value is at rounding level but from which the function rises (a double
    root of its slope there, not a root of it): the step inside it finds the function still
    positive, and the search goes on to the root in the bracket (the closed form ``r``)."""
    lo, hi, r = np.array([1.0]), np.array([2.0]), 1.6  # (away from 0: ulp-sized steps)
    slope, _ = _counted(lambda t: (t - lo) * (r - t) + 1e-18)
    f_lo, f_hi = slope(lo), slope(hi)
    assert f_hi[0] < 0.0 < f_lo[0] <= 1e-17
    root = illinois(slope, lo, hi, f_lo, f_hi, 60)
    assert abs(root[0] - r) <= 1e-15


def test_one_bracket_in_floats_takes_the_batchs_steps() -> None:
    """:func:`illinois_one` gives each bracket the batch's root bit for bit, with the same
    evaluations, on smooth roots and on the two rounding cases above."""
    rng = np.random.default_rng(5)
    lo = rng.uniform(-3.0, 2.0, 100)
    hi = lo + rng.uniform(0.01, 1.0, 100)
    r = lo + rng.uniform(0.0, 1.0, 100) * (hi - lo)
    cases: list[tuple[Callable[[np.ndarray], np.ndarray], np.ndarray, np.ndarray]] = [
        (lambda t: np.sin(r - t) * (2.0 + np.cos(t)), lo, hi),
        (lambda t: 1e-3 * (0.75 + 1e-17 - t) - 1e-25, np.array([0.25]), np.array([0.75])),
        (lambda t: (t - 1.0) * (1.6 - t) + 1e-18, np.array([1.0]), np.array([2.0])),
    ]
    for f, a, b in cases:
        batch, calls = _counted(f)
        roots = illinois(batch, a, b, f(a), f(b), 60)
        for k in range(a.size):
            seen: list[float] = []

            def one(
                t: float, k: int = k, seen: list[float] = seen, f: Slope = f, size: int = a.size
            ) -> float:
                seen.append(t)
                return float(f(np.full(size, t))[k])

            root = illinois_one(one, float(a[k]), float(b[k]), float(f(a)[k]), float(f(b)[k]), 60)
            assert root == roots[k]
            assert seen == [float(c[k]) for c in calls][: len(seen)]


def _stick(r: np.ndarray) -> Slope:
    """A function falling steeply to its root ``r`` and then barely: regula falsi keeps
    landing next to the flat end, and the Illinois halving needs ~30 steps to cross."""
    return lambda t: np.where(t < r, 1e3 * (r - t), -1e-6 * (t - r) - 1e-9)


def test_a_bracket_to_a_width_keeps_its_end_past_the_root() -> None:
    """With ``width`` and ``keep="hi"``, the end returned is at most ``width`` past the
    root (closed-form roots ``r``: smooth ones, and ones the Illinois steps cross slowly),
    where the function is not positive: in fewer evaluations than to machine precision on
    smooth roots, and on the slow ones only with the midpoint steps after ``falsi`` steps
    (without them the bracket is still wider after as many evaluations). The float twin
    takes the same steps."""
    rng = np.random.default_rng(7)
    lo, hi = np.zeros(200), np.ones(200)
    r = rng.uniform(0.05, 0.95, 200)
    width = 2.0**-24
    smooth, calls = _counted(lambda t: np.sin(r - t) * (2.0 + np.cos(t)))
    got = illinois(smooth, lo, hi, smooth(lo), smooth(hi), 36, width, "hi", 12)
    assert np.all((got >= r) & (got - r <= width))
    assert len(calls) - 2 <= 8
    stick, calls = _counted(_stick(r))
    got = illinois(stick, lo, hi, stick(lo), stick(hi), 36, width, "hi", 12)
    assert np.all((got >= r) & (got - r <= width) & (stick(got) <= 0.0))
    unsafe = illinois(stick, lo, hi, stick(lo), stick(hi), 36, width, "hi")
    assert np.all(unsafe - r > 1e3 * width)
    for k in range(0, 200, 20):
        seen: list[float] = []

        def one(t: float, k: int = k, seen: list[float] = seen) -> float:
            seen.append(t)
            return float(_stick(r)(np.full(200, t))[k])

        assert illinois_one(one, 0.0, 1.0, one(0.0), one(1.0), 36, width, "hi", 12) == got[k]
        assert seen[2:] == [float(c[k]) for c in calls[2:]][: len(seen) - 2]
