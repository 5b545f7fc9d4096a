"""The G1's low-level messages (``unitree_hg`` IDL): LowCmd_/LowState_ packing, unpacking and CRC.

The one codec of ``rt/lowcmd`` and ``rt/lowstate`` for every side of the wire: the policy
node and the sentinel pack LowCmd_ and unpack LowState_; the sim bridge unpacks LowCmd_
and packs LowState_ the way the robot does; the probe is a second client. Pure: no DDS traffic. The messages are the SDK's own IDL types and the CRC is the
SDK's ``CRC().Crc`` over the packed message (a uint32 in the message's ``crc`` field); a
message whose CRC is wrong is dropped by the robot and commands nothing.

Layout: ``motor_cmd`` / ``motor_state`` hold :data:`UNITREE_NUM_MOTORS` slots in motor
order; a joint of the robot config sits in its slot (:func:`bcg_robot.wire.unitree_motor_slots`:
slots 0..28 on a 29-DoF G1, a 23-DoF one skips six), and the other slots are unused. A LowCmd_
carries ``mode_pr`` (:data:`MODE_PR_PITCH_ROLL` or :data:`MODE_PR_AB`), ``mode_machine``
copied from the robot's LowState_ (:data:`UNITREE_MODE_MACHINE_29DOF` on a 29-DoF G1) and
``reserve[4]``, where the BCG writers put their stamp (:func:`bcg_robot.wire.command_stamp`,
under the CRC). LowState_ motor temperatures are two sensors per motor; one value per
joint is packed into both and the hotter one is unpacked.

Motor mode rule, the same in both directions
    Only :data:`MOTOR_MODE_ENABLE` (1) drives a motor. A motor in any other mode,
    :data:`MOTOR_MODE_DISABLE` (0) included, is disabled: it produces no torque and its
    q, dq, tau, kp and kd are ignored, as on the robot's drives.

    Packing (node, sentinel, probe): every joint of the robot is written with mode 1 in
    every command, damping and zero torque included, because a disabled motor cannot
    damp; the slots beyond the robot's joints are written with mode 0 and zero targets and
    gains.

    Unpacking (sim bridge): a disabled joint unpacks to an all-zero row
    (zero torque), never to the targets it carries, so a simulated robot goes limp where the
    real one would rather than hold a pose the real one would drop. The command is not
    rejected for it (the robot does not reject it either); :attr:`UnpackedLowCmd.disabled`
    names the joints so that a receiver can count them.
"""

from __future__ import annotations

import dataclasses
import enum

import numpy as np
from unitree_sdk2py.idl.default import unitree_hg_msg_dds__LowCmd_, unitree_hg_msg_dds__LowState_
from unitree_sdk2py.idl.unitree_hg.msg.dds_ import LowCmd_, LowState_
from unitree_sdk2py.utils.crc import CRC

from bcg_robot.remote import RemoteState, decode_remote, encode_remote
from bcg_robot.wire import COMMAND_FIELDS, UNITREE_MODE_MACHINE_29DOF, UNITREE_NUM_MOTORS, LowCommand, unitree_motor_slots

MOTOR_MODE_DISABLE = 0
MOTOR_MODE_ENABLE = 1
MODE_PR_PITCH_ROLL = 0
MODE_PR_AB = 1
CORRUPT_CRC_MASK = 0xDEADBEEF  # XOR-ed into a CRC to corrupt it on purpose (fault injection)

_crc = CRC()  # the SDK's CRC is a stateless singleton


class CommandVerdict(enum.Enum):
    """What a robot does with a LowCmd_ before it looks at the motors."""

    ACCEPTED = "accepted"
    BAD_CRC = "bad_crc"
    BAD_MODE_MACHINE = "bad_mode_machine"


@dataclasses.dataclass(frozen=True)
class UnpackedLowCmd:
    """The command the robot's first ``n`` motors get from one LowCmd_ (motor order)."""

    command: LowCommand  # disabled joints are all-zero rows
    disabled: tuple[int, ...]  # joints whose motor mode was not MOTOR_MODE_ENABLE


@dataclasses.dataclass(frozen=True)
class LowStateSample:
    """The content of one LowState_ for the robot's first ``n`` motors (motor order)."""

    tick: int
    mode_machine: int
    q: np.ndarray
    dq: np.ndarray
    tau_est: np.ndarray
    quat_wxyz: np.ndarray
    gyro: np.ndarray  # rad/s, IMU frame
    accelerometer: np.ndarray  # m/s^2, IMU frame
    motor_fault: np.ndarray  # ``motorstate`` code per joint (0: no fault)
    motor_temperature: np.ndarray  # deg C per joint
    remote: RemoteState

    @property
    def num_joints(self) -> int:
        return int(self.q.shape[0])


# CRC ---------------------------------------------------------------------------------------
def message_crc(msg: LowCmd_ | LowState_) -> int:
    """The CRC the robot expects in ``msg.crc`` (computed over every other field)."""
    return _crc.Crc(msg)


def crc_ok(msg: LowCmd_ | LowState_) -> bool:
    return msg.crc == _crc.Crc(msg)


def seal(msg: LowCmd_ | LowState_, corrupt: bool = False) -> None:
    """Write the CRC into ``msg`` (a wrong one with ``corrupt``)."""
    crc = _crc.Crc(msg)
    msg.crc = (crc ^ CORRUPT_CRC_MASK) & 0xFFFFFFFF if corrupt else crc


def _slots(num_joints: int, what: str) -> tuple[int, ...]:
    if num_joints > UNITREE_NUM_MOTORS:
        raise ValueError(f"{what} for {num_joints} joints, a unitree_hg message has {UNITREE_NUM_MOTORS} motors")
    return unitree_motor_slots(num_joints)


# LowCmd_ -----------------------------------------------------------------------------------
def new_low_cmd() -> LowCmd_:
    return unitree_hg_msg_dds__LowCmd_()


def pack_low_cmd(command: LowCommand, mode_machine: int, mode_pr: int = MODE_PR_PITCH_ROLL,
                 stamp: list[int] | None = None, into: LowCmd_ | None = None) -> LowCmd_:
    """A sealed LowCmd_ for ``command`` (written into ``into`` when given, which is reused).

    Mode 1 in the slots of the command's joints, mode 0 with zero targets and gains in the
    others; ``stamp`` goes into ``reserve`` (None leaves ``reserve`` as it is)."""
    slots = _slots(command.num_joints, "command")
    msg = into if into is not None else new_low_cmd()
    msg.mode_pr = mode_pr
    msg.mode_machine = mode_machine
    if stamp is not None:
        msg.reserve = stamp
    joint_in_slot = {slot: j for j, slot in enumerate(slots)}
    q, dq, tau, kp, kd = (getattr(command, f).tolist() for f in COMMAND_FIELDS)
    for i, m in enumerate(msg.motor_cmd):
        j = joint_in_slot.get(i)
        if j is not None:
            m.mode, m.q, m.dq, m.tau, m.kp, m.kd = MOTOR_MODE_ENABLE, q[j], dq[j], tau[j], kp[j], kd[j]
        else:
            m.mode, m.q, m.dq, m.tau, m.kp, m.kd = MOTOR_MODE_DISABLE, 0.0, 0.0, 0.0, 0.0, 0.0
    seal(msg)
    return msg


def check_low_cmd(msg: LowCmd_, mode_machine: int = UNITREE_MODE_MACHINE_29DOF) -> CommandVerdict:
    """CRC first, then the robot's ``mode_machine``: a command failing either is dropped whole."""
    if not crc_ok(msg):
        return CommandVerdict.BAD_CRC
    if msg.mode_machine != mode_machine:
        return CommandVerdict.BAD_MODE_MACHINE
    return CommandVerdict.ACCEPTED


def unpack_low_cmd(msg: LowCmd_, num_joints: int) -> UnpackedLowCmd:
    """The motors of ``num_joints`` joints (their slots), in joint order; a motor not in mode 1 is
    disabled (an all-zero row)."""
    rows = np.zeros((len(COMMAND_FIELDS), num_joints))
    disabled = []
    for i, slot in enumerate(_slots(num_joints, "command")):
        m = msg.motor_cmd[slot]
        if m.mode == MOTOR_MODE_ENABLE:
            rows[:, i] = (m.q, m.dq, m.tau, m.kp, m.kd)
        else:
            disabled.append(i)
    return UnpackedLowCmd(LowCommand.from_matrix(rows), tuple(disabled))


# LowState_ ---------------------------------------------------------------------------------
def quat_to_rpy(q_wxyz: np.ndarray) -> np.ndarray:
    """Roll, pitch, yaw (rad) of a w x y z quaternion, as the robot reports ``imu_state.rpy``."""
    w, x, y, z = q_wxyz
    roll = np.arctan2(2 * (w * x + y * z), 1 - 2 * (x * x + y * y))
    pitch = np.arcsin(np.clip(2 * (w * y - z * x), -1.0, 1.0))
    yaw = np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
    return np.array([roll, pitch, yaw])


def new_low_state() -> LowState_:
    return unitree_hg_msg_dds__LowState_()


def pack_low_state(sample: LowStateSample, into: LowState_ | None = None, corrupt_crc: bool = False) -> LowState_:
    """A sealed LowState_ for ``sample`` (written into ``into`` when given, which is reused).

    The sample's joints, in their slots, report motor mode 1; ``corrupt_crc`` seals it with a wrong CRC."""
    slots = _slots(sample.num_joints, "state")
    msg = into if into is not None else new_low_state()
    msg.tick = int(sample.tick) & 0xFFFFFFFF
    msg.mode_machine = int(sample.mode_machine)
    imu = msg.imu_state
    imu.quaternion = [float(v) for v in sample.quat_wxyz]
    imu.gyroscope = [float(v) for v in sample.gyro]
    imu.accelerometer = [float(v) for v in sample.accelerometer]
    imu.rpy = [float(v) for v in quat_to_rpy(sample.quat_wxyz)]
    columns = zip(sample.q.tolist(), sample.dq.tolist(), sample.tau_est.tolist(), sample.motor_fault.tolist(),
                  np.rint(sample.motor_temperature).astype(int).tolist())
    for slot, (q, dq, tau, fault, temperature) in zip(slots, columns):
        m = msg.motor_state[slot]
        m.mode = MOTOR_MODE_ENABLE
        m.q, m.dq, m.tau_est = q, dq, tau
        m.motorstate = int(fault)
        m.temperature = [temperature, temperature]
    msg.wireless_remote = encode_remote(sample.remote)
    seal(msg, corrupt=corrupt_crc)
    return msg


def unpack_low_state(msg: LowState_, num_joints: int) -> LowStateSample:
    """The motors of ``num_joints`` joints (their slots) of ``msg``, in joint order (its CRC is not
    checked here: :func:`crc_ok`)."""
    motors = [msg.motor_state[slot] for slot in _slots(num_joints, "state")]
    imu = msg.imu_state
    return LowStateSample(
        tick=int(msg.tick),
        mode_machine=int(msg.mode_machine),
        q=np.array([m.q for m in motors], dtype=np.float64),
        dq=np.array([m.dq for m in motors], dtype=np.float64),
        tau_est=np.array([m.tau_est for m in motors], dtype=np.float64),
        quat_wxyz=np.asarray(imu.quaternion, dtype=np.float64),
        gyro=np.asarray(imu.gyroscope, dtype=np.float64),
        accelerometer=np.asarray(imu.accelerometer, dtype=np.float64),
        motor_fault=np.array([m.motorstate for m in motors], dtype=np.int64),
        motor_temperature=np.array([max(m.temperature) for m in motors], dtype=np.float64),
        remote=decode_remote(msg.wireless_remote),
    )


if len(new_low_cmd().motor_cmd) != UNITREE_NUM_MOTORS or len(new_low_state().motor_state) != UNITREE_NUM_MOTORS:
    raise ImportError(f"the installed unitree_sdk2py's unitree_hg messages do not hold {UNITREE_NUM_MOTORS} motors")
