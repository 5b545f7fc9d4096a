"""``unitree_sdk`` robot interface: ``rt/lowstate`` in, ``rt/lowcmd`` out (unitree_hg IDL).

Every LowCmd carries ``mode_pr`` (parameter), ``mode_machine`` copied from the latest
LowState, motor mode 1 (enable) on the robot's joints and the SDK's CRC; no command is
sent before a LowState has given ``mode_machine``. Remote buttons are decoded with
:mod:`bcg_robot.remote`. Facts: ``shared/reference/g1.md``.

LowState arrives at 500 Hz but is used at 50 Hz: the DDS thread only keeps the newest
sample; :meth:`latest_state` decodes it and (``check_state_crc``) verifies its CRC when a
control tick asks. A sample with a wrong CRC is dropped and counted; the previous good
state is returned, so a corrupted stream goes stale and trips DAMP.

Sport mode: on a real G1 the high-level sport service must let go before low-level
commands take effect. :func:`release_sport_mode` asks ``MotionSwitcherClient`` until no
mode is active, and gives up after a timeout with a one-line error. The sim bridge has
no motion switcher service, so in simulation set ``release_sport_mode`` to false (the
node parameter of the same name); on hardware keep it true. Releasing sport mode makes a
standing robot go limp: hang it in its gantry first.

``ChannelFactoryInitialize(domain_id, network_interface)`` may run once per process;
:func:`init_channel_factory` remembers the first call and refuses a different one.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

import numpy as np

from bcg_robot.errors import BCGInputError
from bcg_robot.remote import decode_remote
from bcg_robot.wire import UNITREE_COMMAND_TOPIC, UNITREE_NUM_MOTORS, UNITREE_STATE_TOPIC, LowCommand

from bcg_policy_node.interfaces.robot_state import RobotState

MOTOR_MODE_ENABLE = 1
_factory_lock = threading.Lock()
_factory_args: tuple[int, str] | None = None


class SdkInterfaceError(BCGInputError):
    """The Unitree SDK side could not be set up (domain, interface, sport mode)."""


def init_channel_factory(domain_id: int, network_interface: str) -> None:
    """``ChannelFactoryInitialize`` once per process; the same arguments again are a no-op."""
    global _factory_args
    from unitree_sdk2py.core.channel import ChannelFactoryInitialize

    with _factory_lock:
        if _factory_args is not None:
            if _factory_args != (domain_id, network_interface):
                raise SdkInterfaceError(
                    "unitree_sdk", f"DDS already initialised on domain {_factory_args[0]} / '{_factory_args[1]}' in this "
                    f"process, cannot switch to {domain_id} / '{network_interface}'")
            return
        try:
            ChannelFactoryInitialize(domain_id, network_interface)
        except Exception as err:  # the SDK raises a bare Exception
            raise SdkInterfaceError("unitree_sdk", f"cannot open DDS domain {domain_id} on '{network_interface}': {err}") from None
        _factory_args = (domain_id, network_interface)


def release_sport_mode(timeout_s: float, log: Callable[[str], None] = print) -> None:
    """Release the sport (high-level) service through ``MotionSwitcherClient`` or raise."""
    from unitree_sdk2py.comm.motion_switcher.motion_switcher_client import MotionSwitcherClient

    client = MotionSwitcherClient()
    client.SetTimeout(min(max(timeout_s, 0.1), 5.0))
    client.Init()
    deadline = time.monotonic() + timeout_s
    while True:
        code, result = client.CheckMode()
        if code == 0 and result is not None and not result.get("name"):
            log("sport mode released: no motion service active")
            return
        if time.monotonic() > deadline:
            what = f"mode '{result.get('name')}' still active" if code == 0 and result else f"no answer (code {code})"
            raise SdkInterfaceError(
                "unitree_sdk", f"motion switcher: {what} after {timeout_s:.1f} s; on the sim bridge set release_sport_mode:=false")
        if code == 0:
            log(f"releasing sport mode '{result.get('name')}'")
            client.ReleaseMode()
        time.sleep(0.2)


def state_from_lowstate(msg, num_joints: int, received_at: float) -> RobotState:
    motors = msg.motor_state[:num_joints]
    imu = msg.imu_state
    return RobotState(
        tick=int(msg.tick),
        received_at=received_at,
        q=np.array([m.q for m in motors], dtype=np.float64),
        dq=np.array([m.dq for m in motors], dtype=np.float64),
        tau_est=np.array([m.tau_est for m in motors], dtype=np.float64),
        quat_wxyz=np.asarray(imu.quaternion, dtype=np.float64),
        gyro=np.asarray(imu.gyroscope, dtype=np.float64),
        motor_fault=np.array([m.motorstate for m in motors], dtype=np.int64),
        motor_temperature=np.array([max(m.temperature) for m in motors], dtype=np.float64),
        remote=decode_remote(msg.wireless_remote),
        mode_machine=int(msg.mode_machine),
    )


def fill_lowcmd(cmd_msg, command: LowCommand, mode_machine: int, mode_pr: int) -> None:
    """Write ``command`` into a LowCmd_ (motor mode 1 on the first n motors, 0 beyond)."""
    cmd_msg.mode_pr = mode_pr
    cmd_msg.mode_machine = mode_machine
    n = command.num_joints
    q, dq, tau, kp, kd = (v.tolist() for v in (command.q, command.dq, command.tau, command.kp, command.kd))
    for i in range(UNITREE_NUM_MOTORS):
        m = cmd_msg.motor_cmd[i]
        if i < n:
            m.mode, m.q, m.dq, m.tau, m.kp, m.kd = MOTOR_MODE_ENABLE, q[i], dq[i], tau[i], kp[i], kd[i]
        else:
            m.mode, m.q, m.dq, m.tau, m.kp, m.kd = 0, 0.0, 0.0, 0.0, 0.0, 0.0


class UnitreeSdkRobotInterface:
    kind = "unitree_sdk"

    def __init__(self, num_joints: int, domain_id: int, network_interface: str, mode_pr: int = 0,
                 release_sport: bool = True, release_timeout_s: float = 5.0, log: Callable[[str], None] = print,
                 subscribe_state: bool = True, check_state_crc: bool = True):
        from unitree_sdk2py.core.channel import ChannelPublisher, ChannelSubscriber
        from unitree_sdk2py.idl.default import unitree_hg_msg_dds__LowCmd_
        from unitree_sdk2py.idl.unitree_hg.msg.dds_ import LowCmd_, LowState_
        from unitree_sdk2py.utils.crc import CRC

        init_channel_factory(domain_id, network_interface)
        if release_sport:
            release_sport_mode(release_timeout_s, log)
        self._n = num_joints
        self._mode_pr = mode_pr
        self._lock = threading.Lock()
        self._send_lock = threading.Lock()
        self._state: RobotState | None = None
        self._raw = None  # newest LowState sample, not yet decoded
        self._raw_at = 0.0
        self._check_crc = check_state_crc
        self.bad_state_crc = 0
        self._crc = CRC()
        self._cmd = unitree_hg_msg_dds__LowCmd_()
        self._log = log
        self._no_state_warned = False
        self._pub = ChannelPublisher(UNITREE_COMMAND_TOPIC, LowCmd_)
        self._pub.Init()
        self._subs = []
        if subscribe_state:
            sub = ChannelSubscriber(UNITREE_STATE_TOPIC, LowState_)
            sub.Init(self._on_lowstate, 0)
            self._subs.append(sub)
        self._lowcmd_type = LowCmd_

    def _on_lowstate(self, msg) -> None:
        at = time.monotonic()
        with self._lock:
            self._raw, self._raw_at = msg, at

    def latest_state(self) -> RobotState | None:
        with self._lock:
            raw, at, state = self._raw, self._raw_at, self._state
            self._raw = None
        if raw is None:
            return state
        if self._check_crc and raw.crc != self._crc.Crc(raw):
            self.bad_state_crc += 1
            if self.bad_state_crc in (1, 10, 100) or self.bad_state_crc % 1000 == 0:
                self._log(f"LowState with a wrong CRC dropped ({self.bad_state_crc} so far)")
            return state
        state = state_from_lowstate(raw, self._n, at)
        with self._lock:
            self._state = state
        return state

    def send(self, command: LowCommand) -> None:
        state = self.latest_state()
        if state is None:
            if not self._no_state_warned:
                self._log("no LowState yet: mode_machine unknown, command not sent")
                self._no_state_warned = True
            return
        with self._send_lock:
            fill_lowcmd(self._cmd, command, state.mode_machine, self._mode_pr)
            self._cmd.crc = self._crc.Crc(self._cmd)
            self._pub.Write(self._cmd)

    def watch_commands(self, callback: Callable[[float], None]) -> None:
        from unitree_sdk2py.core.channel import ChannelSubscriber

        sub = ChannelSubscriber(UNITREE_COMMAND_TOPIC, self._lowcmd_type)
        sub.Init(lambda _msg: callback(time.monotonic()), 0)
        self._subs.append(sub)

    def close(self) -> None:
        for sub in self._subs:
            sub.Close()
        self._subs.clear()
        self._pub.Close()
