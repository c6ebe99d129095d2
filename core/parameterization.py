# SPDX-License-Identifier: GPL-3.0-or-later
"""Joint parameters of the Jacobian solvers and their closed-form derivatives.

A Jacobian needs independent joint parameters (reference 001, the log-quaternion IK: a
quaternion's four numbers or an axis–angle pair are not independent, so their partial
derivatives are undefined). Two parameterisations of a ball joint's local rotation ``q``
are offered, chosen by ``SolveOptions.rotation_params``:

* ``"expmap"`` — the logarithmic quaternion ``v = ln q = axis · φ/2`` (Grassia's exponential
  map, reference 001; ``core.rotations.log``), ``q = exp v = (cos θ, sin θ/θ · v)`` with
  ``θ = |v| ≤ π/2``. Its derivatives ``∂q/∂v_k`` (reference 001, ``dq_ln_domain``) and
  ``∂R/∂v_k = ∂R/∂q · ∂q/∂v_k`` (``dr_dq``) are in closed form here, with the Taylor
  expansions of ``sin θ/θ`` and ``(θ cos θ − sin θ)/θ³`` near ``θ = 0``.
* ``"euler"`` — three Euler angles stored as ``(x, y, z)`` in an ``order`` (Blender's
  meaning, :func:`core.rotations.from_euler`: ``"XYZ"`` applies X first, ``R = Rz Ry Rx``).
  The solvers use :data:`EULER_ORDER`; the log-quaternion benchmark passes the reference's
  yaw-pitch-roll order.

A hinge (1-DOF joint, :attr:`core.limits.JointLimits.hinge`) has one parameter, its angle
about the hinge axis; a fixed joint has none. Parameters are re-read from the joints'
quaternions before every update (as the reference does), so the expmap stays in
``|v| ≤ π/2``, far from its singular shell ``|v| = π``.

Each parameter's *angular column* is the angular velocity ``ω_k`` it produces, in the frame
the joint's rotation acts in (``W_{i−1} · rest_i``, see :mod:`core.chain`), per unit
parameter change: ``[ω_k]× = ∂R/∂p_k · Rᵀ``, equivalently ``ω_k = 2 vec(∂q/∂p_k · q*)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import rotations as rot
from .chain import Chain
from .options import RotationParams
from .rotations import SMALL_ANGLE, FloatArray

#: Euler order of the solvers' ``rotation_params="euler"``: Blender's default rotation mode.
#: For a bone along local +Y, gimbal lock needs a quarter turn about the bone axis, which
#: position goals rarely ask for.
EULER_ORDER = "XYZ"

#: The log-quaternion reference's yaw-pitch-roll (``R = Ry(yaw) Rx(pitch) Rz(roll)``, roll
#: about the link axis +Z applied first) in Blender's naming.
YAW_PITCH_ROLL = "ZXY"

_AXES = np.eye(3)


# ---------------------------------------------------------------------- quaternion → matrix
def matrix_derivative(q: ArrayLike, dq: ArrayLike) -> FloatArray:
    """``∂R/∂q · dq``: the change ``(..., 3, 3)`` of ``R(q)`` for a change ``dq (..., 4)``.

    The derivative of :func:`core.rotations.to_matrix` (reference 001's ``dr_dq``, written for
    column vectors).
    """
    q, dq = np.broadcast_arrays(np.asarray(q, dtype=np.float64), np.asarray(dq, dtype=np.float64))
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    dw, dx, dy, dz = dq[..., 0], dq[..., 1], dq[..., 2], dq[..., 3]
    m = np.stack(
        (
            -4.0 * (y * dy + z * dz),
            2.0 * (x * dy + y * dx - w * dz - z * dw),
            2.0 * (x * dz + z * dx + w * dy + y * dw),
            2.0 * (x * dy + y * dx + w * dz + z * dw),
            -4.0 * (x * dx + z * dz),
            2.0 * (y * dz + z * dy - w * dx - x * dw),
            2.0 * (x * dz + z * dx - w * dy - y * dw),
            2.0 * (y * dz + z * dy + w * dx + x * dw),
            -4.0 * (x * dx + y * dy),
        ),
        axis=-1,
    )
    return m.reshape((*q.shape[:-1], 3, 3))


# ---------------------------------------------------------------------- exponential map
def expmap_quaternion_derivative(v: ArrayLike) -> FloatArray:
    """``∂q/∂v_k`` of ``q = exp v``, shape ``(..., 3, 4)`` (row ``k``, wxyz).

    Reference 001 (``dq_ln_domain``) with ``θ = |v|``::

        ∂q_w/∂v_k = −sin θ/θ · v_k
        ∂q_u/∂v_k = sin θ/θ · e_k + (cos θ/θ² − sin θ/θ³) · v_k · v

    and, for ``θ < SMALL_ANGLE``, ``sin θ/θ ≈ 1 − θ²/6``, ``cos θ/θ² − sin θ/θ³ ≈ −1/3 + θ²/30``.

    Args:
        v: log-quaternions ``(..., 3)`` (half rotation vectors, radians).
    """
    v = np.asarray(v, dtype=np.float64)
    theta = np.linalg.norm(v, axis=-1)
    small = theta < SMALL_ANGLE
    safe = np.where(small, 1.0, theta)
    t2 = theta * theta
    sinc = np.where(small, 1.0 - t2 / 6.0, np.sin(safe) / safe)
    c2 = np.where(
        small, -1.0 / 3.0 + t2 / 30.0, (safe * np.cos(safe) - np.sin(safe)) / (safe * safe * safe)
    )
    out = np.empty((*v.shape[:-1], 3, 4))
    out[..., 0] = -sinc[..., None] * v
    out[..., 1:] = sinc[..., None, None] * _AXES + c2[..., None, None] * (
        v[..., :, None] * v[..., None, :]
    )
    return out


def expmap_matrix_derivative(v: ArrayLike) -> FloatArray:
    """``∂R/∂v_k = ∂R/∂q · ∂q/∂v_k`` of ``R(exp v)``, shape ``(..., 3, 3, 3)`` (``k`` first)."""
    v = np.asarray(v, dtype=np.float64)
    q = rot.exp(v)
    return matrix_derivative(q[..., None, :], expmap_quaternion_derivative(v))


def expmap_angular(v: ArrayLike) -> FloatArray:
    """Angular columns ``(..., 3, 3)`` of log-quaternions ``v (..., 3)``: column ``k`` is ``ω_k``.

    ``ω_k = 2 vec(∂q/∂v_k · q*)`` with ``∂q/∂v_k`` of :func:`expmap_quaternion_derivative`;
    since ``vec q = (sin θ/θ) v`` is parallel to ``v`` this simplifies to ::

        Ω = 2 (cos θ · s · I + (cos θ · c + s²) v vᵀ + s² [v]×),

    ``s = sin θ/θ``, ``c = cos θ/θ² − sin θ/θ³`` (``Ω = 2 I`` at ``v = 0``: a half-angle
    parameter turns the joint twice as fast).
    """
    v = np.asarray(v, dtype=np.float64)
    x, y, z = v[..., 0], v[..., 1], v[..., 2]
    t2 = x * x + y * y + z * z
    theta = np.sqrt(t2)
    small = theta < SMALL_ANGLE
    safe = np.where(small, 1.0, theta)
    sin, cos = np.sin(safe), np.cos(theta)
    s = np.where(small, 1.0 - t2 / 6.0, sin / safe)
    c = np.where(small, -1.0 / 3.0 + t2 / 30.0, (safe * np.cos(safe) - sin) / (safe * safe * safe))
    s2 = 2.0 * s * s
    a = 2.0 * cos * s
    b = 2.0 * cos * c + s2
    bx, by, bz = b * x, b * y, b * z
    sx, sy, sz = s2 * x, s2 * y, s2 * z
    bxy, bxz, byz = bx * y, bx * z, by * z
    out = np.stack(
        (
            a + bx * x, bxy - sz, bxz + sy,
            bxy + sz, a + by * y, byz - sx,
            bxz - sy, byz + sx, a + bz * z,
        ),
        axis=-1,
    )  # fmt: skip
    return out.reshape((*v.shape[:-1], 3, 3))


# ---------------------------------------------------------------------- Euler angles
def _axis_rotations(angles: FloatArray, order: str) -> list[FloatArray]:
    """Single-axis quaternions ``(..., 4)`` in application order."""
    out = []
    for name in order:
        k = "XYZ".index(name)
        half = 0.5 * angles[..., k]
        q = np.zeros((*angles.shape[:-1], 4))
        q[..., 0] = np.cos(half)
        q[..., 1 + k] = np.sin(half)
        out.append(q)
    return out


def euler_matrix_derivative(angles: ArrayLike, order: str = EULER_ORDER) -> FloatArray:
    """``∂R/∂(x, y, z)`` of ``R = R_c R_b R_a`` (``order`` = a, b, c), shape ``(..., 3, 3, 3)``.

    ``∂R/∂a = R_c R_b [e_a]× R_a``, ``∂R/∂b = R_c [e_b]× R_b R_a``, ``∂R/∂c = [e_c]× R``; slot
    ``k`` of the result is the derivative by the angle about axis ``k`` (x, y, z).
    """
    angles = np.asarray(angles, dtype=np.float64)
    order = order.upper()
    qa, qb, qc = _axis_rotations(angles, order)
    ra, rb, rc = (rot.to_matrix(q) for q in (qa, qb, qc))
    ka, kb, kc = ("XYZ".index(c) for c in order)
    out = np.empty((*angles.shape[:-1], 3, 3, 3))
    out[..., ka, :, :] = rc @ rb @ _skew(_AXES[ka]) @ ra
    out[..., kb, :, :] = rc @ _skew(_AXES[kb]) @ rb @ ra
    out[..., kc, :, :] = _skew(_AXES[kc]) @ rc @ rb @ ra
    return out


def euler_angular(angles: ArrayLike, order: str = EULER_ORDER) -> FloatArray:
    """Angular columns ``(..., 3, 3)`` of Euler angles ``(..., 3)``; column ``k`` = axis ``k``.

    For ``R = R_c R_b R_a``: ``ω_c = e_c``, ``ω_b = R_c e_b``, ``ω_a = R_c R_b e_a``.
    """
    angles = np.asarray(angles, dtype=np.float64)
    order = order.upper()
    _, qb, qc = _axis_rotations(angles, order)
    ka, kb, kc = ("XYZ".index(c) for c in order)
    out = np.empty((*angles.shape[:-1], 3, 3))
    out[..., :, kc] = _AXES[kc]
    out[..., :, kb] = rot.rotate(qc, _AXES[kb])
    out[..., :, ka] = rot.rotate(rot.multiply(qc, qb), _AXES[ka])
    return out


def wrap_angle(a: ArrayLike) -> FloatArray:
    """Angles ``(...)`` wrapped to ``(−π, π]`` radians."""
    return np.pi - np.mod(np.pi - np.asarray(a, dtype=np.float64), 2.0 * np.pi)


def _skew(v: FloatArray) -> FloatArray:
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


# ---------------------------------------------------------------------- a chain's DOFs
@dataclass(frozen=True, eq=False)
class DofLayout:
    """The parameter vector of a chain pose: which columns belong to which joint.

    Columns are joint-major: a ball joint contributes 3 (``x, y, z`` of its expmap or Euler
    angles), a hinge 1 (its angle), a fixed joint none. Build with :meth:`for_chain`.

    Attributes:
        rotation_params: ``"expmap"`` or ``"euler"``.
        euler_order: the Euler order when ``rotation_params == "euler"``.
        n_joints: joints in the chain.
        ball: ``(nb,)`` indices of the 3-DOF joints.
        ball_columns: ``(nb, 3)`` their columns.
        hinge: ``(nh,)`` indices of the 1-DOF joints.
        hinge_columns: ``(nh,)`` their columns.
        hinge_axes: ``(nh, 3)`` unit hinge axes in the joint frames.
        column_joint: ``(k,)`` the joint of each column.
        weights: ``(k,)`` per-column willingness to move: ``1 − stiffness`` of the column's
            axis (a hinge: ``Σ a_i² (1 − s_i)`` over its axis ``a``), ``0`` for locked axes.
    """

    rotation_params: RotationParams
    euler_order: str
    n_joints: int
    ball: NDArray[np.intp]
    ball_columns: NDArray[np.intp]
    hinge: NDArray[np.intp]
    hinge_columns: NDArray[np.intp]
    hinge_axes: FloatArray
    column_joint: NDArray[np.intp]
    weights: FloatArray

    @classmethod
    def for_chain(
        cls, chain: Chain, rotation_params: RotationParams, euler_order: str = EULER_ORDER
    ) -> DofLayout:
        """The layout of ``chain``'s joints (their :attr:`~core.limits.JointLimits.kind`)."""
        ball: list[int] = []
        ball_cols: list[list[int]] = []
        hinge: list[int] = []
        hinge_cols: list[int] = []
        axes: list[FloatArray] = []
        col_joint: list[int] = []
        weights: list[float] = []
        for i, lim in enumerate(chain.limits):
            kind = lim.kind
            if kind == "ball":
                ball.append(i)
                ball_cols.append([len(col_joint) + c for c in range(3)])
                col_joint.extend([i, i, i])
                weights.extend(lim.weights.tolist())
            elif kind == "hinge":
                axis, _ = lim.hinge
                hinge.append(i)
                hinge_cols.append(len(col_joint))
                axes.append(axis)
                col_joint.append(i)
                stiff = np.asarray(lim.stiffness, dtype=float)
                weights.append(float(np.sum(axis * axis * (1.0 - stiff))))
        return cls(
            rotation_params=rotation_params,
            euler_order=euler_order.upper(),
            n_joints=chain.n_joints,
            ball=np.asarray(ball, dtype=np.intp),
            ball_columns=np.asarray(ball_cols, dtype=np.intp).reshape(-1, 3),
            hinge=np.asarray(hinge, dtype=np.intp),
            hinge_columns=np.asarray(hinge_cols, dtype=np.intp),
            hinge_axes=np.asarray(axes, dtype=np.float64).reshape(-1, 3),
            column_joint=np.asarray(col_joint, dtype=np.intp),
            weights=np.asarray(weights, dtype=np.float64),
        )

    @property
    def size(self) -> int:
        """``k``, the number of parameters (Jacobian columns)."""
        return int(self.column_joint.size)

    def params_of(self, rotations: ArrayLike) -> FloatArray:
        """Parameters ``(..., k)`` of local joint rotations ``(..., n, 4)`` wxyz.

        Hinge joints' rotations are read as their signed angle about the hinge axis (the
        solvers keep them on it by projecting onto the limits).
        """
        q = np.asarray(rotations, dtype=np.float64)
        if self.ball.size == self.n_joints:
            return self._ball_params(q).reshape((*q.shape[:-2], self.size))
        out = np.zeros((*q.shape[:-2], self.size))
        if self.ball.size:
            out[..., self.ball_columns] = self._ball_params(q[..., self.ball, :])
        if self.hinge.size:
            qh = rot.positive_w(q[..., self.hinge, :])
            s = np.sum(qh[..., 1:] * self.hinge_axes, axis=-1)
            out[..., self.hinge_columns] = wrap_angle(2.0 * np.arctan2(s, qh[..., 0]))
        return out

    def rotations_of(self, params: ArrayLike) -> FloatArray:
        """Local joint rotations ``(..., n, 4)`` wxyz of parameters ``(..., k)``."""
        p = np.asarray(params, dtype=np.float64)
        if self.ball.size == self.n_joints:
            return self._ball_rotations(p.reshape((*p.shape[:-1], self.n_joints, 3)))
        q = rot.identity((*p.shape[:-1], self.n_joints))
        if self.ball.size:
            q[..., self.ball, :] = self._ball_rotations(p[..., self.ball_columns])
        if self.hinge.size:
            q[..., self.hinge, :] = rot.from_axis_angle(self.hinge_axes, p[..., self.hinge_columns])
        return q

    def _ball_params(self, q: FloatArray) -> FloatArray:
        if self.rotation_params == "expmap":
            return rot.log(q)
        return rot.to_euler(q, self.euler_order)

    def _ball_rotations(self, p: FloatArray) -> FloatArray:
        if self.rotation_params == "expmap":
            return rot.exp(p)
        return rot.from_euler(p, self.euler_order)

    def ball_angular(self, ball_params: ArrayLike) -> FloatArray:
        """Angular columns ``(..., nb, 3, 3)`` of the ball joints' parameters ``(..., nb, 3)``."""
        if self.rotation_params == "expmap":
            return expmap_angular(ball_params)
        return euler_angular(ball_params, self.euler_order)

    def local_axes(self, params: ArrayLike) -> FloatArray:
        """Angular columns ``(..., k, 3)``: each parameter's ``ω_k`` in its joint's frame."""
        p = np.asarray(params, dtype=np.float64)
        out = np.empty((*p.shape, 3))
        if self.ball.size:
            cols = self.ball_angular(p[..., self.ball_columns])
            out[..., self.ball_columns, :] = np.swapaxes(cols, -1, -2)
        if self.hinge.size:
            out[..., self.hinge_columns, :] = self.hinge_axes
        return out

    def difference(self, goal: ArrayLike, params: ArrayLike) -> FloatArray:
        """``goal − params`` ``(..., k)``, with angles (Euler, hinge) wrapped to ``(−π, π]``."""
        d = np.asarray(goal, dtype=np.float64) - np.asarray(params, dtype=np.float64)
        if self.rotation_params == "euler":
            return wrap_angle(d)
        if self.hinge.size:
            d[..., self.hinge_columns] = wrap_angle(d[..., self.hinge_columns])
        return d

    def nudge(self, size: float) -> FloatArray:
        """A fixed small pose change ``(k,)``: every movable parameter turned by ``size`` rad.

        Expmap parameters are half angles, so they move by ``size / 2``.
        """
        step = np.full(self.size, size)
        if self.rotation_params == "expmap" and self.ball.size:
            step[self.ball_columns] *= 0.5
        return np.where(self.weights > 0.0, step, 0.0)


__all__ = [
    "EULER_ORDER",
    "YAW_PITCH_ROLL",
    "DofLayout",
    "euler_angular",
    "euler_matrix_derivative",
    "expmap_angular",
    "expmap_matrix_derivative",
    "expmap_quaternion_derivative",
    "matrix_derivative",
    "wrap_angle",
]
