# SPDX-License-Identifier: GPL-3.0-or-later
"""Finite-difference checks of every analytic derivative behind the Jacobian solvers.

The bar (issue 3): each analytic Jacobian agrees with central finite differences to 1e-6
relative (``max |J − J_fd| <= 1e-6 · max(1, max |J|)``), for expmap and Euler parameters,
position, angular and twist rows, on random poses. Finite differences are taken of
forward kinematics (core.kinematics) of ``DofLayout.rotations_of(p ± h e_k)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import Chain, JointLimits
from core import rotations as rot
from core.dh import REFERENCE_6R, chain_from_dh
from core.jacobian_matrix import (
    angular_jacobian,
    chain_state,
    dof_anchors,
    dof_axes,
    position_jacobian,
    twist_jacobian,
)
from core.kinematics import forward_kinematics
from core.parameterization import (
    DofLayout,
    euler_angular,
    euler_matrix_derivative,
    expmap_angular,
    expmap_matrix_derivative,
    expmap_quaternion_derivative,
)

FAST = settings(max_examples=20, deadline=None)
H = 1e-6
REL = 1e-6
ORDERS = ("XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX")


def _assert_rel(analytic: np.ndarray, numeric: np.ndarray) -> None:
    scale = max(1.0, float(np.max(np.abs(analytic))))
    assert np.max(np.abs(analytic - numeric)) <= REL * scale, np.max(np.abs(analytic - numeric))


def _central(f: Callable[[np.ndarray], np.ndarray], x: np.ndarray) -> np.ndarray:
    """``∂f/∂x_k`` stacked on a new leading axis ``k``."""
    out = []
    for k in range(x.shape[-1]):
        e = np.zeros_like(x)
        e[..., k] = H
        out.append((f(x + e) - f(x - e)) / (2.0 * H))
    return np.stack(out)


def _vee(m: np.ndarray) -> np.ndarray:
    return np.stack((m[..., 2, 1], m[..., 0, 2], m[..., 1, 0]), axis=-1)


LOG_QUATS = st.sampled_from([0.0, 1e-9, 1e-5, 0.3, 1.0, 1.5, 0.5 * math.pi]).flatmap(
    lambda r: st.integers(0, 2**32 - 1).map(lambda s: (r, s))
)


def _log_quat(radius_seed: tuple[float, int]) -> np.ndarray:
    radius, seed = radius_seed
    d = np.random.default_rng(seed).normal(size=3)
    return radius * d / np.linalg.norm(d)


# ---------------------------------------------------------------------- joint parameters
@FAST
@given(LOG_QUATS)
def test_expmap_quaternion_derivative(radius_seed: tuple[float, int]) -> None:
    v = _log_quat(radius_seed)
    _assert_rel(expmap_quaternion_derivative(v), _central(rot.exp, v))


@FAST
@given(LOG_QUATS)
def test_expmap_matrix_derivative(radius_seed: tuple[float, int]) -> None:
    """∂R/∂v by the reference's chain rule ∂R/∂q · ∂q/∂v (dr_dq, dq_ln_domain)."""
    v = _log_quat(radius_seed)
    _assert_rel(expmap_matrix_derivative(v), _central(lambda x: rot.to_matrix(rot.exp(x)), v))


@FAST
@given(LOG_QUATS)
def test_expmap_angular_columns_are_dR_dv_times_Rt(radius_seed: tuple[float, int]) -> None:
    v = _log_quat(radius_seed)
    r = rot.to_matrix(rot.exp(v))
    from_matrix = _vee(expmap_matrix_derivative(v) @ r.T)  # (k, 3)
    np.testing.assert_allclose(expmap_angular(v), from_matrix.T, atol=1e-12)


@FAST
@given(st.sampled_from(ORDERS), st.integers(0, 2**32 - 1))
def test_euler_matrix_derivative_and_angular_columns(order: str, seed: int) -> None:
    angles = np.random.default_rng(seed).uniform(-math.pi, math.pi, 3)
    d_r = euler_matrix_derivative(angles, order)
    _assert_rel(d_r, _central(lambda x: rot.to_matrix(rot.from_euler(x, order)), angles))
    r = rot.to_matrix(rot.from_euler(angles, order))
    np.testing.assert_allclose(euler_angular(angles, order), _vee(d_r @ r.T).T, atol=1e-12)


# ---------------------------------------------------------------------- chain Jacobians
def _chains() -> dict[str, Chain]:
    rng = np.random.default_rng(0)
    links = rng.normal(size=(5, 3)) * 3.0
    mixed_limits = [
        JointLimits(),
        JointLimits(hinge_axis=(0.3, -0.2, 0.9)),
        JointLimits(lock=(True, False, True)),
        JointLimits(lock=(True, True, True)),
        JointLimits(lock=(False, True, False), cone=1.0, stiffness=(0.5, 0.0, 0.2)),
    ]
    r6 = REFERENCE_6R
    return {
        "free": Chain.from_offsets(links),
        "paper_U": Chain.from_lengths([9, 9, 9, 9, 4]),
        "mixed": Chain.from_offsets(links, limits=mixed_limits),
        "dh_6r": chain_from_dh(r6["a"], r6["d"], r6["alpha"], tool=(0.0, 0.0, 0.1)),
    }


CHAINS = _chains()


def _frames(chain: Chain, layout: DofLayout, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    positions, orientations = forward_kinematics(chain, layout.rotations_of(p))
    return positions[..., -1, :], orientations[..., -1, :]


@FAST
@given(
    st.sampled_from(sorted(CHAINS)),
    st.sampled_from(["expmap", "euler"]),
    st.integers(0, 2**32 - 1),
)
def test_chain_jacobians_match_finite_differences(name: str, params: str, seed: int) -> None:
    chain = CHAINS[name]
    layout = DofLayout.for_chain(chain, params)  # type: ignore[arg-type]
    rng = np.random.default_rng(seed)
    q = rot.from_rotvec(rng.normal(size=(chain.n_joints, 3)) * 1.2)
    p = layout.params_of(q)
    state = chain_state(chain, layout.rotations_of(p))
    axes = dof_axes(layout, state, p)
    anchors = dof_anchors(layout, state)
    effector = state.effector
    base_rot = state.effector_rotation

    # Position rows: ∂e/∂p.
    numeric_pos = _central(lambda x: _frames(chain, layout, x)[0], p).T
    _assert_rel(position_jacobian(axes, anchors, effector), numeric_pos)

    # Angular rows: rotation vector of W(p + h) W(p − h)* over 2h.
    def rotvec_about_base(x: np.ndarray) -> np.ndarray:
        return rot.to_rotvec(rot.multiply(_frames(chain, layout, x)[1], rot.conjugate(base_rot)))

    numeric_ang = _central(rotvec_about_base, p).T
    _assert_rel(angular_jacobian(axes), numeric_ang)

    # Twist rows about the base origin: the velocity of the body point now at the origin.
    body_point = rot.rotate(rot.conjugate(base_rot), -effector)

    def carried_origin(x: np.ndarray) -> np.ndarray:
        e, w = _frames(chain, layout, x)
        return rot.rotate(w, body_point) + e

    numeric_twist = np.concatenate((numeric_ang, _central(carried_origin, p).T), axis=0)
    _assert_rel(twist_jacobian(axes, anchors), numeric_twist)


@pytest.mark.parametrize("params", ["expmap", "euler"])
def test_layout_round_trip_and_columns(params: str) -> None:
    chain = CHAINS["mixed"]
    layout = DofLayout.for_chain(chain, params)  # type: ignore[arg-type]
    assert layout.size == 3 + 1 + 1 + 0 + 3
    np.testing.assert_array_equal(layout.column_joint, [0, 0, 0, 1, 2, 4, 4, 4])
    # Locked axes weigh 0, a hinge from two locks has the free axis's weight, stiffness 1 − s.
    np.testing.assert_allclose(layout.weights, [1, 1, 1, 1, 1, 0.5, 0.0, 0.8])
    rng = np.random.default_rng(5)
    p = rng.uniform(-0.8, 0.8, (4, layout.size))
    np.testing.assert_allclose(layout.params_of(layout.rotations_of(p)), p, atol=1e-12)
    q = layout.rotations_of(p)
    np.testing.assert_allclose(q[:, 3], rot.identity((4,)))
