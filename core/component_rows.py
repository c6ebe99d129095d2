# SPDX-License-Identifier: GPL-3.0-or-later
"""Vector and quaternion algebra on component rows, written into given rows (``out``).

The counterpart of :mod:`core.components` for batched passes that keep their temporaries in
a preallocated scratch block (:mod:`core.triangulation_batch`): each function computes what
its namesake there computes — the same operations in the same order, so the same numbers —
into rows it is given. A component may also be a Python float (a constant such as the rest
pose): a product with the float ``0.0`` is dropped (the same sum, to the sign of a zero).
Float constants the passes use often are one-element arrays (:func:`const`): they broadcast
like the float, and a ufunc takes them about 1 µs faster than a Python float, which it
converts on every call.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .components import Num, Quat, Vec
from .rotations import FloatArray

Rows = tuple[Any, ...]


@functools.lru_cache(maxsize=256)
def const(x: float) -> FloatArray:
    """``x`` as a one-element read-only array, made once per value: it broadcasts like the
    float, and a ufunc takes it about 1 µs faster than a Python float (which it converts on
    every call)."""
    out = np.array([x])
    out.flags.writeable = False
    return out


ONE, ZERO, TWO = const(1.0), const(0.0), const(2.0)

#: Hamilton products as signed terms ``(sign, i, j)`` meaning ``± p[i] q[j]``, summed left
#: to right (the order of :func:`core.components.qmul` and ``qmul_conj``).
QMUL = (
    ((1, 0, 0), (-1, 1, 1), (-1, 2, 2), (-1, 3, 3)),
    ((1, 0, 1), (1, 1, 0), (1, 2, 3), (-1, 3, 2)),
    ((1, 0, 2), (-1, 1, 3), (1, 2, 0), (1, 3, 1)),
    ((1, 0, 3), (1, 1, 2), (-1, 2, 1), (1, 3, 0)),
)
QMUL_CONJ = (
    ((1, 0, 0), (1, 1, 1), (1, 2, 2), (1, 3, 3)),
    ((1, 0, 1), (-1, 1, 0), (-1, 2, 3), (1, 3, 2)),
    ((1, 0, 2), (1, 1, 3), (-1, 2, 0), (-1, 3, 1)),
    ((1, 0, 3), (-1, 1, 2), (1, 2, 1), (-1, 3, 0)),
)


def zero(x: Num) -> bool:
    """True for the float ``0.0`` (a product with it is dropped: the same sum, to the sign
    of a zero)."""
    return type(x) is float and x == 0.0


def terms_into(terms: list[tuple[int, Num, Num]], out: FloatArray, tmp: FloatArray) -> FloatArray:
    """``Σ ± f·g`` over ``terms`` ``(sign, f, g)``, left to right, into ``out``."""
    first = True
    for sign, f, g in terms:
        if (type(f) is float and f == 0.0) or (type(g) is float and g == 0.0):
            continue  # (as zero)
        if first:
            np.multiply(f, g, out)
            if sign < 0:
                np.negative(out, out)
            first = False
        else:
            np.multiply(f, g, tmp)
            (np.add if sign > 0 else np.subtract)(out, tmp, out)
    if first:
        out.fill(0.0)
    return out


def _arrays(*parts: tuple[Num, ...]) -> bool:
    """True when no component is a Python float (the unrolled paths below apply)."""
    for part in parts:
        for x in part:
            if type(x) is float:
                return False
    return True


_mul, _add, _sub = np.multiply, np.add, np.subtract


def dot_into(a: Vec, b: Vec, out: FloatArray, tmp: FloatArray) -> FloatArray:
    """``a·b`` into ``out`` (as :func:`core.components.vdot`)."""
    if not _arrays(a, b):
        return terms_into([(1, a[0], b[0]), (1, a[1], b[1]), (1, a[2], b[2])], out, tmp)
    _mul(a[0], b[0], out)
    _mul(a[1], b[1], tmp)
    _add(out, tmp, out)
    _mul(a[2], b[2], tmp)
    return _add(out, tmp, out)


def cross_into(a: Vec, b: Vec, out: Rows, tmp: FloatArray) -> Rows:
    """``a × b`` into ``out`` (as :func:`core.components.vcross`; ``out`` aliases neither)."""
    if not _arrays(a, b):
        for k, (i, j) in enumerate(((1, 2), (2, 0), (0, 1))):
            terms_into([(1, a[i], b[j]), (-1, a[j], b[i])], out[k], tmp)
        return out
    a0, a1, a2 = a
    b0, b1, b2 = b
    o0, o1, o2 = out
    _mul(a1, b2, o0)
    _mul(a2, b1, tmp)
    _sub(o0, tmp, o0)
    _mul(a2, b0, o1)
    _mul(a0, b2, tmp)
    _sub(o1, tmp, o1)
    _mul(a0, b1, o2)
    _mul(a1, b0, tmp)
    _sub(o2, tmp, o2)
    return out


def combine_into(s: Num, a: Vec, t: Num, b: Vec, out: Rows, tmp: FloatArray) -> Rows:
    """``s·a + t·b`` into ``out`` (as :func:`core.components.vcombine`)."""
    if not _arrays((s, t), a, b):
        for k in range(3):
            terms_into([(1, s, a[k]), (1, t, b[k])], out[k], tmp)
        return out
    for ak, bk, ok in zip(a, b, out, strict=True):
        _mul(s, ak, ok)
        _mul(t, bk, tmp)
        _add(ok, tmp, ok)
    return out


def products_into(p: Quat, q: Quat, table: tuple[Any, ...], out: Rows, tmp: FloatArray) -> Rows:
    """A Hamilton product (``table``: :data:`QMUL` or :data:`QMUL_CONJ`) into ``out``,
    which aliases neither factor."""
    if not _arrays(p, q):
        for k, terms in enumerate(table):
            terms_into([(sign, p[i], q[j]) for sign, i, j in terms], out[k], tmp)
        return out
    pw, px, py, pz = p
    qw, qx, qy, qz = q
    ow, ox, oy, oz = out
    if table is QMUL:
        _mul(pw, qw, ow)
        _mul(px, qx, tmp)
        _sub(ow, tmp, ow)
        _mul(py, qy, tmp)
        _sub(ow, tmp, ow)
        _mul(pz, qz, tmp)
        _sub(ow, tmp, ow)
        _mul(pw, qx, ox)
        _mul(px, qw, tmp)
        _add(ox, tmp, ox)
        _mul(py, qz, tmp)
        _add(ox, tmp, ox)
        _mul(pz, qy, tmp)
        _sub(ox, tmp, ox)
        _mul(pw, qy, oy)
        _mul(px, qz, tmp)
        _sub(oy, tmp, oy)
        _mul(py, qw, tmp)
        _add(oy, tmp, oy)
        _mul(pz, qx, tmp)
        _add(oy, tmp, oy)
        _mul(pw, qz, oz)
        _mul(px, qy, tmp)
        _add(oz, tmp, oz)
        _mul(py, qx, tmp)
        _sub(oz, tmp, oz)
        _mul(pz, qw, tmp)
        _add(oz, tmp, oz)
        return out
    _mul(pw, qw, ow)
    _mul(px, qx, tmp)
    _add(ow, tmp, ow)
    _mul(py, qy, tmp)
    _add(ow, tmp, ow)
    _mul(pz, qz, tmp)
    _add(ow, tmp, ow)
    _mul(pw, qx, ox)
    _mul(px, qw, tmp)
    _sub(ox, tmp, ox)
    _mul(py, qz, tmp)
    _sub(ox, tmp, ox)
    _mul(pz, qy, tmp)
    _add(ox, tmp, ox)
    _mul(pw, qy, oy)
    _mul(px, qz, tmp)
    _add(oy, tmp, oy)
    _mul(py, qw, tmp)
    _sub(oy, tmp, oy)
    _mul(pz, qx, tmp)
    _sub(oy, tmp, oy)
    _mul(pw, qz, oz)
    _mul(px, qy, tmp)
    _sub(oz, tmp, oz)
    _mul(py, qx, tmp)
    _add(oz, tmp, oz)
    _mul(pz, qw, tmp)
    _sub(oz, tmp, oz)
    return out


def rotate_into(q: Quat, v: Vec, out: Rows, t: Rows, tmp: FloatArray) -> Rows:
    """``q`` applied to ``v``, into ``out`` (as :func:`core.components.qrotate`:
    ``v + w·t + u × t`` with ``t = 2 u × v``); ``t`` and ``tmp`` are scratch rows."""
    u = q[1:]
    cross_into(u, v, t, tmp)
    for row in t:
        np.multiply(row, TWO, row)
    cross_into(u, t, out, tmp)
    for k in range(3):
        np.multiply(t[k], q[0], tmp)
        np.add(v[k], tmp, tmp)
        np.add(tmp, out[k], out[k])
    return out


def matrix_into(q: Quat, out: Rows, products: Rows) -> Rows:
    """Rotation matrices of unit ``q`` into ``out`` (9 rows, as :func:`core.components.qmatrix`;
    exactly ``I`` for the identity); ``products`` are 9 scratch rows.

    The doubled products ``2·(x·y)`` are taken as ``x·(2y)`` (scaling by 2 is exact, so the
    entries ``2·(f ± g)`` and ``1 − 2·(f + g)`` are the same numbers, six calls fewer).
    """
    w, x, y, z = q
    xx, yy, zz, xy, xz, yz, wx, wy, wz = products
    x2, y2, z2 = out[6:]  # (written last)
    for row, two in zip((x2, y2, z2), (x, y, z), strict=True):
        np.add(two, two, row)
    for row, (f, g) in zip(
        products,
        ((x, x2), (y, y2), (z, z2), (x, y2), (x, z2), (y, z2), (w, x2), (w, y2), (w, z2)),
        strict=True,
    ):
        np.multiply(f, g, row)
    add, sub = np.add, np.subtract
    entries: tuple[tuple[FloatArray, FloatArray, np.ufunc, bool], ...] = (
        (yy, zz, add, True),
        (xy, wz, sub, False),
        (xz, wy, add, False),
        (xy, wz, add, False),
        (xx, zz, add, True),
        (yz, wx, sub, False),
        (xz, wy, sub, False),
        (yz, wx, add, False),
        (xx, yy, add, True),
    )
    for row, (f, g, op, one) in zip(out, entries, strict=True):
        op(f, g, row)
        if one:
            np.subtract(1.0, row, row)
    return out


def mapply_const_into(m: tuple[float, ...], v: Vec, out: Rows, tmp: FloatArray) -> Rows:
    """``m · v`` for one row-major matrix ``m`` (9 floats) and component rows ``v``, into
    ``out`` (3 rows, aliasing no ``v``; as :func:`core.components.mapply`, the products
    with zero entries dropped)."""
    for k in range(3):
        terms_into([(1, m[3 * k + j], v[j]) for j in range(3)], out[k], tmp)
    return out


def mapply_into(m: Rows, v: Vec, out: FloatArray, tmp: FloatArray) -> None:
    """``m · v`` into ``out`` (as :func:`core.components.mapply`): ``v`` three ``(k, N)``
    component arrays of ``k`` points each, ``m`` nine ``(N,)`` rows, ``out`` ``(3, k, N)``,
    ``tmp`` ``(k, N)``."""
    for k in range(3):
        row = out[k]
        np.multiply(m[3 * k], v[0], row)
        np.multiply(m[3 * k + 1], v[1], tmp)
        np.add(row, tmp, row)
        np.multiply(m[3 * k + 2], v[2], tmp)
        np.add(row, tmp, row)


MATRIX_IDENTITY = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)
