"""The bridge's Unitree DDS emulation through ``unitree_sdk2py``: ``rt/lowstate`` out, ``rt/lowcmd`` in.

Exactly what the policy node's ``unitree_sdk`` backend talks to on a real G1: it
cannot tell the two apart except by the network interface and domain id.
"""

from __future__ import annotations

import threading

from unitree_sdk2py.core.channel import ChannelFactoryInitialize, ChannelPublisher, ChannelSubscriber
from unitree_sdk2py.idl.unitree_hg.msg.dds_ import LowCmd_, LowState_

from bcg_robot.remote import RemoteState, encode_remote, BUTTON_BITS
from bcg_robot.wire import UNITREE_COMMAND_TOPIC, UNITREE_STATE_TOPIC
from bcg_sim_bridge.interfaces import CommandSink, InterfaceCounters
from bcg_sim_bridge.physics import BridgeState
from bcg_sim_bridge.unitree_codec import CommandVerdict, check_low_cmd, fill_low_state, low_cmd_to_command, new_low_state


def buttons_from_mask(mask: int) -> frozenset[str]:
    return frozenset(name for name, bit in BUTTON_BITS.items() if mask >> bit & 1)


class UnitreeDdsInterface:
    def __init__(self, domain_id: int, network_interface: str, num_joints: int, on_command: CommandSink):
        ChannelFactoryInitialize(domain_id, network_interface)
        self.counters = InterfaceCounters()
        self._num_joints = num_joints
        self._on_command = on_command
        self._msg = new_low_state()
        self._remote_lock = threading.Lock()
        self._remote = encode_remote(RemoteState())
        self._pub = ChannelPublisher(UNITREE_STATE_TOPIC, LowState_)
        self._pub.Init()
        self._sub = ChannelSubscriber(UNITREE_COMMAND_TOPIC, LowCmd_)
        self._sub.Init(self._handle_command, 16)  # a queue: every message is checked and counted

    def _handle_command(self, msg: LowCmd_) -> None:
        verdict = check_low_cmd(msg)
        if verdict is CommandVerdict.BAD_CRC:
            self.counters.add("bad_crc")
            return
        if verdict is CommandVerdict.BAD_MODE_MACHINE:
            self.counters.add("bad_mode_machine")
            return
        self.counters.add("accepted")
        self._on_command(low_cmd_to_command(msg, self._num_joints))

    def set_remote_buttons(self, mask: int) -> None:
        with self._remote_lock:
            self._remote = encode_remote(RemoteState(buttons_from_mask(mask)))

    def publish_state(self, state: BridgeState, corrupt_crc: bool = False) -> None:
        with self._remote_lock:
            remote = self._remote
        self._pub.Write(fill_low_state(self._msg, state, remote, corrupt_crc))
        self.counters.add("states_sent")

    def close(self) -> None:
        self._sub.Close()
        self._pub.Close()
