"""The bounds beyond which a simulated state counts as failed (checked by :mod:`bcg_train.sim.failure`)."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class SimBounds:
    """Bounds no physical motion of the robot reaches; leaving one is a simulation failure.

    ``joint_speed_factor`` multiplies the joints' velocity limits; the others are absolute.
    A bound of 0 is off (``max_root_distance`` needs a reference to measure from)."""

    joint_speed_factor: float = 4.0
    max_root_height: float = 3.0  # m above the floor
    max_root_speed: float = 20.0  # m/s
    max_root_distance: float = 3.0  # m from the reference root position

    def validate(self) -> None:
        for f in dataclasses.fields(self):
            if getattr(self, f.name) < 0:
                raise ValueError(f"sim_bounds.{f.name} must be >= 0 (0: off)")
