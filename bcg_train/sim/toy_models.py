"""Tiny inline MJCF models for tests and quick benchmarks.

``sphere_drop``: an unactuated sphere on a free joint above a plane.
``two_link_leg``: a hip body on vertical and horizontal slides with an actuated
hip and knee and a spherical foot, dropped onto a plane.

Both use Euler integration with one solver iteration (the setting under which
reverse mode through MJX matches finite differences) and a contact time constant
given by the caller; REFSAFE is disabled so short time constants are honoured.
"""

from __future__ import annotations

import mujoco
import numpy as np

from bcg_train.sim.config import JointDrive

_OPTION = (
    '<option timestep="{dt}" integrator="Euler" iterations="1" ls_iterations="1">'
    '<flag refsafe="disable" eulerdamp="disable"/></option>'
)


def sphere_drop(height: float = 0.3, timeconst: float = 0.02, dt: float = 0.005) -> tuple[mujoco.MjModel, JointDrive]:
    xml = f"""
<mujoco model="sphere_drop">
  {_OPTION.format(dt=dt)}
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1" solref="{timeconst} 1"/>
    <body name="ball" pos="0 0 {height}">
      <freejoint/>
      <geom name="ball" type="sphere" size="0.05" mass="1" solref="{timeconst} 1"/>
    </body>
  </worldbody>
</mujoco>"""
    model = mujoco.MjModel.from_xml_string(xml)
    empty = np.zeros((0,))
    return model, JointDrive(kp=empty, kd=empty, effort_limit=empty, default_pose=empty)


def two_link_leg(height: float = 0.75, timeconst: float = 0.02, dt: float = 0.005) -> tuple[mujoco.MjModel, JointDrive]:
    xml = f"""
<mujoco model="two_link_leg">
  <compiler angle="radian"/>
  {_OPTION.format(dt=dt)}
  <default><geom solref="{timeconst} 1" friction="0.8 0.02 0.001"/></default>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1"/>
    <body name="hip" pos="0 0 {height}">
      <joint name="slide_x" type="slide" axis="1 0 0"/>
      <joint name="slide_z" type="slide" axis="0 0 1"/>
      <geom name="hip" type="sphere" size="0.06" mass="4" contype="0" conaffinity="0"/>
      <body name="thigh">
        <joint name="hip" type="hinge" axis="0 1 0" range="-1.5 1.5"/>
        <geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.03" mass="1" contype="0" conaffinity="0"/>
        <body name="shank" pos="0 0 -0.3">
          <joint name="knee" type="hinge" axis="0 1 0" range="-2.5 0"/>
          <geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.025" mass="0.6" contype="0" conaffinity="0"/>
          <geom name="foot" type="sphere" pos="0 0 -0.3" size="0.03" mass="0.1"/>
        </body>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor name="hip" joint="hip" ctrlrange="-60 60"/>
    <motor name="knee" joint="knee" ctrlrange="-60 60"/>
  </actuator>
</mujoco>"""
    model = mujoco.MjModel.from_xml_string(xml)
    drive = JointDrive(
        kp=np.array([80.0, 80.0]),
        kd=np.array([2.0, 2.0]),
        effort_limit=np.array([60.0, 60.0]),
        default_pose=np.array([0.4, -0.8]),
        action_scale=0.5,
    )
    return model, drive
