"""Typed configuration of the gradient estimator (plain, BCG, global smoothing)."""

from __future__ import annotations

import dataclasses
import enum


class Estimator(str, enum.Enum):
    """Which gradient estimator the rollout uses; all share one code path.

    * ``PLAIN``: plain analytic gradients through the nominal rollout.
    * ``BCG``: Bundled Contact Gradients, a bundle only at stiff-contact events.
    * ``GLOBAL_SMOOTHING``: randomized smoothing, a bundle started whenever none is
      running (so every control step is bundled).
    """

    PLAIN = "plain"
    BCG = "bcg"
    GLOBAL_SMOOTHING = "global_smoothing"


class Overflow(str, enum.Enum):
    """What a step that needs a bundle but finds no slot (``bundle_slots``) passes backward.

    * ``PLAIN``: the plain analytic gradient of the stiff contact step.
    * ``CUT``: nothing: the environment's state after the step is cut from the graph
      (``stop_gradient``), so later rewards send no gradient back across it, as across a
      SHAC window boundary. The forward pass is the plain step in both.
    """

    PLAIN = "plain"
    CUT = "cut"


class BundleForward(str, enum.Enum):
    """What the rollout continues from after a bundled step.

    * ``MEAN``: the arithmetic mean of the branches (the published method).
    * ``NOMINAL``: the unperturbed nominal step; the gradient is still the branch mean
      (straight-through: value of the nominal, derivative of the mean).
    """

    MEAN = "mean"
    NOMINAL = "nominal"


@dataclasses.dataclass(frozen=True)
class BCGConfig:
    """Settings of the estimator. Defaults are the published ones.

    Attributes (paper symbol in brackets):
      mode: the estimator.
      num_branches [B]: perturbed branches per bundle.
      bundle_steps [H]: control steps a bundle runs before collapsing to its mean.
      sigma_p: std of the Cartesian position offset of the contact point (m).
      sigma_v: std of the Cartesian velocity offset of the contact point (m/s).
      damping [lambda]: damping of the contact-Jacobian pseudo-inverse (m^2).
      force_threshold [tau]: trigger threshold (N) on the per-contact PEAK normal
        force over the control step, i.e. the maximum over the step's physics
        substeps and over contacts of the normal constraint force of that substep.
      forward: what the rollout continues from (branch mean or nominal).
      bundle_slots [M]: how many environments of a batch may run branches in one step
        (0: all of them). The branch rows are simulated in chunks of K rows, and only the
        chunks holding a slot in use run: a step costs the nominal chunk plus
        ceil(slots in use x B / K) chunks, at most ceil(M B / K); M bounds the memory the
        backward pass keeps (every chunk's residuals). An environment that needs a bundle
        beyond M takes the plain step and is counted (``overflowed``).
      overflow: what such an overflowing step passes backward (:class:`Overflow`).

    ``mode``, ``num_branches``, ``bundle_steps``, ``forward`` and ``bundle_slots`` shape the compiled
    program. ``sigma_p``, ``sigma_v``, ``damping`` and ``force_threshold`` may also be
    JAX scalars (e.g. arguments of a jitted function), so one compile serves several
    values of them.
    """

    mode: Estimator = Estimator.BCG
    num_branches: int = 10
    bundle_steps: int = 2
    sigma_p: float = 0.01
    sigma_v: float = 0.02
    damping: float = 1e-4
    force_threshold: float = 400.0
    forward: BundleForward = BundleForward.MEAN
    bundle_slots: int = 0
    overflow: Overflow = Overflow.PLAIN

    def __post_init__(self) -> None:
        object.__setattr__(self, "mode", Estimator(self.mode))
        object.__setattr__(self, "forward", BundleForward(self.forward))
        object.__setattr__(self, "overflow", Overflow(self.overflow))
        if self.num_branches < 1:
            raise ValueError("num_branches must be >= 1")
        if self.bundle_slots < 0:
            raise ValueError("bundle_slots must be >= 0 (0: every environment)")
        if self.bundle_steps < 1:
            raise ValueError("bundle_steps must be >= 1")
        for name in ("sigma_p", "sigma_v", "damping", "force_threshold"):
            value = getattr(self, name)
            if isinstance(value, (int, float)) and value < 0:
                raise ValueError(f"{name} must be >= 0")
