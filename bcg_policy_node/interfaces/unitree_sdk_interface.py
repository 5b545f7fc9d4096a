"""``unitree_sdk`` robot interface: ``rt/lowstate`` in, ``rt/lowcmd`` out (unitree_hg IDL).

Messages are packed and unpacked by :mod:`bcg_robot.unitree_hg` (its motor mode rule:
mode 1 on every joint of the robot in every command, damping included). Every LowCmd
carries ``mode_pr`` (parameter), ``mode_machine`` copied from the latest LowState, the
writer's stamp in ``reserve`` (:func:`bcg_robot.wire.command_stamp`) and the SDK's CRC; no
command is sent before a LowState has given ``mode_machine``.

No DDS listener on the robot's topics (the SDK's motion-switcher client has one on its own
response topic, made and closed within a configure: :func:`release_sport_mode`). Cyclone's Python binding writes while holding the GIL, and a
write delivers locally to every reader in the process; with a listener on such a reader
the receive thread can sit in that listener waiting for the GIL while the writer waits
for the listener: a deadlock (seen in the sentinel, which writes and watches
``rt/lowcmd``). So every reader here is polled: LowState (history depth 1) and, when
watching, ``rt/lowcmd`` (depth 64, local writers ignored) are taken when a control tick,
the node's idle poll (not active) or the sentinel's check asks; a command is dated when it
is taken. The 500 Hz state costs nothing in Python between ticks: only the newest
sample is decoded, dated to its arrival (:mod:`bcg_policy_node.interfaces.arrival`).
:meth:`latest_state` with ``wait_s`` > 0 waits (GIL released, on a
DDS waitset) for the next sample to arrive, so a tick computes on a state that is
fresh rather than up to one state period old; when none comes in time it uses the
newest it has. ``check_state_crc``: a sample with a wrong CRC is dropped and counted;
the previous good state is returned, so a corrupted stream goes stale and trips DAMP.

Sport mode: on a real G1 the high-level sport service must let go before low-level
commands take effect. :func:`release_sport_mode` asks ``MotionSwitcherClient`` until no
mode is active, and gives up after a timeout with a one-line error. The sim bridge has
no motion switcher service, so in simulation set ``release_sport_mode`` to false (the
node parameter of the same name); on hardware keep it true. Releasing sport mode makes a
standing robot go limp: hang it in its gantry first.

``ChannelFactoryInitialize(domain_id, network_interface)`` may run once per process;
:func:`init_channel_factory` remembers the first call and refuses a different one. It
configures the domain (network interface); this interface's own participant joins it.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Callable

from bcg_robot.errors import BCGInputError
from bcg_robot.unitree_hg import crc_ok, new_low_cmd, pack_low_cmd, unpack_low_state
from bcg_robot.wire import (TRANSPORT_UNITREE_SDK, UNITREE_COMMAND_TOPIC, UNITREE_STATE_TOPIC, CommandWriter,
                            LowCommand, command_stamp, writer_from_stamp)

from bcg_policy_node.interfaces.arrival import ArrivalClock
from bcg_policy_node.interfaces.robot_state import RobotState, SeenCommand

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
                    TRANSPORT_UNITREE_SDK,
                    f"DDS already initialised on domain {_factory_args[0]} / '{_factory_args[1]}' in this "
                    f"process, cannot switch to {domain_id} / '{network_interface}'")
            return
        try:
            ChannelFactoryInitialize(domain_id, network_interface)
        except Exception as err:  # the SDK raises a bare Exception
            raise SdkInterfaceError(TRANSPORT_UNITREE_SDK,
                                    f"cannot open DDS domain {domain_id} on '{network_interface}': {err}") from None
        _factory_args = (domain_id, network_interface)


def release_sport_mode(timeout_s: float, log: Callable[[str], None] = print) -> None:
    """Release the sport (high-level) service through ``MotionSwitcherClient`` or raise."""
    from unitree_sdk2py.comm.motion_switcher.motion_switcher_client import MotionSwitcherClient

    client = MotionSwitcherClient()
    try:
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
                raise SdkInterfaceError(TRANSPORT_UNITREE_SDK, f"motion switcher: {what} after {timeout_s:.1f} s; on "
                                        "the sim bridge set release_sport_mode:=false")
            if code == 0:
                log(f"releasing sport mode '{result.get('name')}'")
                client.ReleaseMode()
            time.sleep(0.2)
    finally:
        close_rpc_client(client)


def close_rpc_client(client) -> None:
    """Close the channels an SDK RPC client opened when it was made: a response reader with a DDS
    listener and a thread of its own, and a request writer. The SDK gives the client no close, so
    each configure left them behind (Python run on DDS's threads in the control process, for
    every response on the robot's domain). Reaches into the SDK's private attributes: the SDK is
    pinned (requirements/no-deps.txt), and a version without them fails this at once in the tests."""
    stub = getattr(client, "_ClientBase__stub")
    getattr(stub, "_ClientStub__recvChannel").CloseReader()
    getattr(stub, "_ClientStub__sendChannel").CloseWriter()


def state_from_lowstate(msg, num_joints: int, received_at: float) -> RobotState:
    """The node's view of one LowState_ (CRC not checked here), dated ``received_at``."""
    sample = unpack_low_state(msg, num_joints)
    return RobotState(
        tick=sample.tick,
        received_at=received_at,
        q=sample.q,
        dq=sample.dq,
        tau_est=sample.tau_est,
        quat_wxyz=sample.quat_wxyz,
        gyro=sample.gyro,
        motor_fault=sample.motor_fault,
        motor_temperature=sample.motor_temperature,
        remote=sample.remote,
        mode_machine=sample.mode_machine,
    )


class UnitreeSdkRobotInterface:
    kind = TRANSPORT_UNITREE_SDK

    def __init__(self, num_joints: int, domain_id: int, network_interface: str, mode_pr: int = 0,
                 release_sport: bool = True, release_timeout_s: float = 5.0, log: Callable[[str], None] = print,
                 check_state_crc: bool = True, role: str = "node", watch_commands: bool = False):
        from cyclonedds.core import InstanceState, ReadCondition, SampleState, ViewState, WaitSet
        from cyclonedds.domain import DomainParticipant
        from cyclonedds.pub import DataWriter
        from cyclonedds.qos import Policy, Qos
        from cyclonedds.sub import DataReader
        from cyclonedds.topic import Topic
        from unitree_sdk2py.idl.unitree_hg.msg.dds_ import LowCmd_, LowState_

        init_channel_factory(domain_id, network_interface)
        if release_sport:
            release_sport_mode(release_timeout_s, log)
        self._n = num_joints
        self._mode_pr = mode_pr
        self._lock = threading.Lock()  # one thread at a time in take/decode/write
        self._state: RobotState | None = None
        self._arrival = ArrivalClock()
        self._check_crc = check_state_crc
        self.bad_state_crc = 0
        self._cmd = new_low_cmd()
        self._log = log
        self._no_state_warned = False
        self._session = int.from_bytes(os.urandom(4), "little")
        self._role = role
        self._sequence = 0
        self.writer = CommandWriter(role, f"{role}#{self._session:08x}")
        self._participant = DomainParticipant(domain_id)
        state_topic = Topic(self._participant, UNITREE_STATE_TOPIC, LowState_)
        command_topic = Topic(self._participant, UNITREE_COMMAND_TOPIC, LowCmd_)
        self._state_reader = DataReader(self._participant, state_topic,
                                        Qos(Policy.Reliability.BestEffort, Policy.History.KeepLast(1)))
        self._fresh = ReadCondition(self._state_reader, SampleState.NotRead | ViewState.Any | InstanceState.Any)
        self._waitset = WaitSet(self._participant)
        self._waitset.attach(self._fresh)
        self._writer = DataWriter(self._participant, command_topic)
        self._command_reader = None
        if watch_commands:
            self._command_reader = DataReader(
                self._participant, command_topic,
                Qos(Policy.Reliability.BestEffort, Policy.History.KeepLast(64), Policy.IgnoreLocal.Participant))

    # state -------------------------------------------------------------------------------
    def latest_state(self, wait_s: float = 0.0) -> RobotState | None:
        """The newest good state; with ``wait_s`` > 0 the next sample to arrive within it."""
        if self._state_reader is None:  # closed
            return self._state
        if wait_s > 0:
            with self._lock:
                self._take_state()  # what is there now is the fallback
            self._waitset.wait(int(wait_s * 1e9))  # ctypes: the GIL is released while waiting
        with self._lock:
            self._take_state()
            return self._state

    def _take_state(self) -> None:
        if self._state_reader is None:
            return
        taken = time.monotonic()  # before the take: decoding counts toward the state's age
        samples = self._state_reader.take(1)
        if not samples or not samples[-1].sample_info.valid_data:
            self._arrival.took(taken, None)
            return
        raw = samples[-1]
        at = self._arrival.took(taken, raw.sample_info.source_timestamp * 1e-9)
        if self._check_crc and not crc_ok(raw):
            self.bad_state_crc += 1
            if self.bad_state_crc in (1, 10, 100) or self.bad_state_crc % 1000 == 0:
                self._log(f"LowState with a wrong CRC dropped ({self.bad_state_crc} so far)")
            return
        self._state = state_from_lowstate(raw, self._n, at)

    # commands ----------------------------------------------------------------------------
    def send(self, command: LowCommand) -> None:
        with self._lock:
            if self._state is None:
                self._take_state()
            state = self._state
            if state is None:
                if not self._no_state_warned:
                    self._log("no LowState yet: mode_machine unknown, command not sent")
                    self._no_state_warned = True
                return
            self._sequence += 1
            if self._writer is None:  # closed
                return
            pack_low_cmd(command, state.mode_machine, self._mode_pr,
                         command_stamp(self._role, self._session, self._sequence), into=self._cmd)
            self._writer.write(self._cmd)

    def take_commands(self) -> list[SeenCommand]:
        """Commands other processes wrote on ``rt/lowcmd`` since the last call (valid CRC only:
        the robot drops the rest, so they command nothing)."""
        if self._command_reader is None:
            return []
        with self._lock:
            samples = self._command_reader.take(64)
            now = time.monotonic()
            seen = []
            for msg in samples:
                if not msg.sample_info.valid_data or not crc_ok(msg):
                    continue
                seen.append(SeenCommand(now, writer_from_stamp(msg.reserve)))
            return seen

    def close(self) -> None:
        with self._lock:
            self._waitset.detach(self._fresh)
            self._command_reader = None
            self._state_reader = self._writer = None
            self._participant = None
