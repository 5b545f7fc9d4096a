"""Node parameters that choose and set up the robot interface, and the factory."""

from __future__ import annotations

import dataclasses

from rclpy.callback_groups import CallbackGroup
from rclpy.lifecycle import LifecycleNode
from rclpy.node import Node

from bcg_robot.config import RobotConfig
from bcg_robot.errors import BCGInputError

from bcg_policy_node.interfaces.robot_interface import INTERFACE_KINDS
from bcg_policy_node.node.parameters import declare_startup_parameter


@dataclasses.dataclass(frozen=True)
class InterfaceParams:
    kind: str = "ros2"  # "ros2" (sim bridge topics) or "unitree_sdk" (rt/lowstate, rt/lowcmd)
    domain_id: int = 1  # unitree_sdk DDS domain: 0 on the robot, 1 for the simulator convention
    network_interface: str = "lo"  # unitree_sdk NIC: the robot's 192.168.123.x interface on hardware
    mode_pr: int = 0  # unitree_sdk LowCmd mode_pr: 0 pitch/roll ankles (the robot config's ankle joints); 1 (A/B) is refused
    release_sport_mode: bool = True  # unitree_sdk: MotionSwitcherClient release first (false on the sim bridge)
    motion_switcher_timeout_s: float = 5.0
    check_state_crc: bool = True  # unitree_sdk: drop LowState samples whose CRC is wrong

    @classmethod
    def declare(cls, node: Node, prefix: str = "") -> "InterfaceParams":
        defaults = cls()
        values = {f.name: declare_startup_parameter(node, prefix + f.name, getattr(defaults, f.name))
                  for f in dataclasses.fields(cls)}
        params = cls(**values)
        params.validate(node.get_name())
        return params

    def validate(self, source: str) -> None:
        if self.kind not in INTERFACE_KINDS:
            raise BCGInputError(source, f"parameter 'kind': '{self.kind}' is not one of {list(INTERFACE_KINDS)}")
        if not 0 <= self.domain_id <= 232:
            raise BCGInputError(source, f"parameter 'domain_id': {self.domain_id} not in 0..232")
        if not (isinstance(self.network_interface, str) and self.network_interface.strip()):  # '-p network_interface:=' is None
            raise BCGInputError(source, "parameter 'network_interface' is empty")
        if self.mode_pr != 0:  # the policy's and the config's ankle joints are pitch and roll
            raise BCGInputError(source, f"parameter 'mode_pr': {self.mode_pr}, but only 0 (pitch/roll ankles, the robot "
                                        f"config's ankle joints) is supported; 1 (A/B) would drive the ankles' motors differently")
        if not 0 < self.motion_switcher_timeout_s <= 60:  # it blocks configure; inf would wait forever
            raise BCGInputError(source, f"parameter 'motion_switcher_timeout_s' must be in (0, 60] s, got {self.motion_switcher_timeout_s}")


def open_interface(node: Node, params: InterfaceParams, robot: RobotConfig, group: CallbackGroup | None = None,
                   role: str = "node"):
    """The node (``role`` "node") opens it to control: it releases sport mode first and takes
    state. The sentinel ("sentinel") needs no state on ros2 and only ``mode_machine`` on the
    SDK. Both watch the command stream for other writers. On ros2 the command publisher of a
    ``LifecycleNode`` is a lifecycle publisher (commands only while the node is active)."""
    from bcg_robot.wire import STAMP_ROLES

    if role not in STAMP_ROLES:
        raise ValueError(f"role must be one of {list(STAMP_ROLES)}")
    if params.kind == "ros2":
        from bcg_policy_node.interfaces.ros2_interface import Ros2RobotInterface
        from bcg_policy_node.operator_api import SENTINEL_IDENTIFY_WITHIN_S, WRITER_ROLES

        return Ros2RobotInterface(node, robot.joint_names, group, subscribe_state=role == "node", watch_commands=True,
                                  writer_roles=WRITER_ROLES, lifecycle_command=isinstance(node, LifecycleNode),
                                  identify_within_s=SENTINEL_IDENTIFY_WITHIN_S if role == "sentinel" else 0.0)
    from bcg_policy_node.interfaces.unitree_sdk_interface import UnitreeSdkRobotInterface

    log = node.get_logger().info
    return UnitreeSdkRobotInterface(
        robot.num_joints, params.domain_id, params.network_interface, params.mode_pr,
        release_sport=params.release_sport_mode and role == "node", release_timeout_s=params.motion_switcher_timeout_s,
        log=log, check_state_crc=params.check_state_crc, role=role, watch_commands=True)
