"""From Bradley-Terry strengths to per-trace rewards, anchored on the group's verifier outcome."""

from __future__ import annotations

import numpy as np

__all__ = ["strengths_to_rewards"]


def strengths_to_rewards(strengths: np.ndarray, verifier_reward: float | np.ndarray, scale: float = 0.5) -> np.ndarray:
    """Map BT strengths of one routed group to rewards::

        reward_i = verifier_reward_i + scale * (sigmoid(theta_i - mean(theta)) - 0.5)

    The sigmoid term is the trace's win probability against a trace of average strength, minus one half: it lies in
    (-0.5, 0.5), so rewards stay within ``scale / 2`` of the verifier reward. With ``scale < 1`` an all-correct
    group's rewards stay above an all-incorrect group's (the verifier outcome remains the anchor), and the bounded
    squashing keeps one overconfident strength from dominating the group. Strengths near 0 (a judge that could not
    tell the traces apart) give rewards near the verifier reward.

    Parameters
    ----------
    strengths : array of shape (n,)
        Fitted strengths of the group.
    verifier_reward : float or array of shape (n,)
        The verifier's reward of each trace (equal within a non-diverse group).
    scale : float
        Width of the reward spread (``>= 0``).
    """
    theta = np.asarray(strengths, dtype=np.float64)
    if theta.ndim != 1 or not np.isfinite(theta).all():
        raise ValueError("strengths must be a finite 1-D array")
    base = np.broadcast_to(np.asarray(verifier_reward, dtype=np.float64), theta.shape)
    if not np.isfinite(base).all():
        raise ValueError("verifier_reward must be finite")
    if not (np.isfinite(scale) and scale >= 0):
        raise ValueError(f"scale must be a finite number >= 0, got {scale!r}")
    if theta.size == 0:
        return theta.copy()
    centred = theta - theta.mean()
    return base + scale * (0.5 * np.tanh(0.5 * centred))  # sigmoid(x) - 0.5 == tanh(x / 2) / 2, without overflow
