"""The bridge's ``unitree_sdk`` transport through ``unitree_sdk2py``: ``rt/lowstate`` out, ``rt/lowcmd`` in.

Exactly what the policy node's ``unitree_sdk`` backend talks to on a real G1: it
cannot tell the two apart except by the network interface and domain id. Messages are
packed and unpacked by :mod:`bcg_robot.unitree_hg`, whose motor mode rule the bridge
applies like the robot: a joint whose motor mode is not 1 is disabled (zero torque), and
the command is counted in ``disabled_motor_cmds``. The bridge simulates the ankles in
pitch/roll mode only: a command in A/B mode (``mode_pr`` 1), whose ankle targets the robot
would read as motor A/B positions, is dropped whole and counted in ``ab_ankle_mode``
rather than applied as if it were pitch/roll.
"""

from __future__ import annotations

import threading

import numpy as np
from unitree_sdk2py.core.channel import ChannelPublisher, ChannelSubscriber
from unitree_sdk2py.idl.unitree_hg.msg.dds_ import LowCmd_, LowState_

from bcg_robot.remote import RemoteState, buttons_from_mask
from bcg_robot.unitree_hg import (MODE_PR_PITCH_ROLL, CommandVerdict, LowStateSample, check_low_cmd, new_low_state,
                                  pack_low_state, unpack_low_cmd)
from bcg_robot.wire import UNITREE_COMMAND_TOPIC, UNITREE_MODE_MACHINE_29DOF, UNITREE_STATE_TOPIC, LowCommand
from bcg_policy_node.interfaces.unitree_sdk_interface import init_channel_factory
from bcg_sim_bridge.interfaces import CommandSink, InterfaceCounters
from bcg_sim_bridge.physics import BridgeState

MOTOR_TEMPERATURE_C = 35.0  # simulated drives stay cool


def receive_low_cmd(msg: LowCmd_, num_joints: int, counters: InterfaceCounters,
                    mode_machine: int = UNITREE_MODE_MACHINE_29DOF) -> LowCommand | None:
    """What the motors get from one LowCmd_, counted; None when the robot would drop it whole."""
    verdict = check_low_cmd(msg, mode_machine)
    if verdict is CommandVerdict.BAD_CRC:
        counters.add("bad_crc")
        return None
    if verdict is CommandVerdict.BAD_MODE_MACHINE:
        counters.add("bad_mode_machine")
        return None
    if msg.mode_pr != MODE_PR_PITCH_ROLL:  # A/B ankles: not simulated, so not applied as pitch/roll
        counters.add("ab_ankle_mode")
        return None
    unpacked = unpack_low_cmd(msg, num_joints)
    if not unpacked.command.is_finite():  # MuJoCo would zero every motor's control for it: refused, counted
        counters.add("nonfinite")
        return None
    counters.add("accepted")
    if unpacked.disabled:
        counters.add("disabled_motor_cmds")
    return unpacked.command


def state_sample(state: BridgeState, remote: RemoteState, mode_machine: int = UNITREE_MODE_MACHINE_29DOF,
                 ) -> LowStateSample:
    """The LowState_ content of a simulated G1: cool drives without faults unless ``state`` carries them."""
    n = state.q.shape[0]
    fault = state.motor_fault if state.motor_fault is not None else np.zeros(n, dtype=np.int64)
    temperature = state.motor_temperature if state.motor_temperature is not None else np.full(n, MOTOR_TEMPERATURE_C)
    return LowStateSample(
        tick=state.tick, mode_machine=mode_machine, q=state.q, dq=state.dq, tau_est=state.tau,
        quat_wxyz=state.imu_quat, gyro=state.imu_gyro, accelerometer=state.imu_acc,
        motor_fault=fault, motor_temperature=temperature, remote=remote)


class UnitreeSdkBridgeInterface:
    def __init__(self, domain_id: int, network_interface: str, num_joints: int, on_command: CommandSink,
                 mode_machine: int = UNITREE_MODE_MACHINE_29DOF):
        init_channel_factory(domain_id, network_interface)  # the SDK's bare Exception as a one-line SdkInterfaceError
        self.counters = InterfaceCounters()
        self._num_joints = num_joints
        self._mode_machine = mode_machine
        self._on_command = on_command
        self._msg = new_low_state()
        self._remote_lock = threading.Lock()
        self._remote = RemoteState()
        self._pub = ChannelPublisher(UNITREE_STATE_TOPIC, LowState_)
        self._pub.Init()
        self._sub = ChannelSubscriber(UNITREE_COMMAND_TOPIC, LowCmd_)
        # no queue: each LowCmd_ is checked and handed on in DDS's listener thread as it arrives
        # (pure work under short locks, no DDS write). The SDK's queue dropped the newest message
        # when full, so a stalled handler applied stale commands; without it the reader keeps the
        # newest sample (KEEP_LAST 1) and the latest command wins, as on the robot.
        self._sub.Init(self._handle_command, 0)

    def _handle_command(self, msg: LowCmd_) -> None:
        command = receive_low_cmd(msg, self._num_joints, self.counters, self._mode_machine)
        if command is not None:
            self._on_command(command)

    def set_remote_buttons(self, mask: int) -> None:
        with self._remote_lock:
            self._remote = RemoteState(buttons_from_mask(mask))

    def publish_state(self, state: BridgeState, corrupt_crc: bool = False) -> None:
        with self._remote_lock:
            remote = self._remote
        self._pub.Write(pack_low_state(state_sample(state, remote, self._mode_machine), into=self._msg, corrupt_crc=corrupt_crc))
        self.counters.add("states_sent")

    def close(self) -> None:
        self._sub.Close()
        self._pub.Close()
