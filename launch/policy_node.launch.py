"""Launch the policy node and its sentinel (needs a ROS 2 install with launch_ros).

    ros2 launch bcg_policy_node policy_node.launch.py policy_path:=/path/policy.onnx \
        kind:=unitree_sdk network_interface:=enp3s0 domain_id:=0

Sim-to-sim against the bridge's Unitree DDS emulation: ``kind:=unitree_sdk domain_id:=1
network_interface:=lo release_sport_mode:=false`` (the bridge has no motion switcher);
against its ROS 2 topics: ``kind:=ros2``. ``autostart:=true`` configures and activates
the lifecycle node at once; otherwise drive it with ``ros2 lifecycle set /policy_node
configure`` / ``activate``. The operator API (run, stop, reset, e-stop) is documented in
bcg_policy_node/operator_api.py.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import LifecycleNode, Node
from launch_ros.parameter_descriptions import ParameterValue

ARGS = {
    "policy_path": ("", "ONNX policy exported by bcg_train"),
    "kind": ("ros2", "robot interface: ros2 (sim bridge topics) or unitree_sdk (rt/lowstate, rt/lowcmd)"),
    "domain_id": ("1", "unitree_sdk DDS domain: 0 on the robot, 1 for the simulator"),
    "network_interface": ("lo", "unitree_sdk network interface: the robot's 192.168.123.x NIC on hardware"),
    "release_sport_mode": ("true", "release the sport service through MotionSwitcherClient (false on the sim bridge)"),
    "deadman_timeout_s": ("0.0", "operator deadman timeout, 0 = off"),
    "autostart": ("false", "configure and activate at start-up"),
    "sentinel": ("true", "start the sentinel process"),
}


def generate_launch_description():
    cfg = {name: LaunchConfiguration(name) for name in ARGS}
    interface = {
        "kind": cfg["kind"],
        "domain_id": ParameterValue(cfg["domain_id"], value_type=int),
        "network_interface": cfg["network_interface"],
    }
    node = LifecycleNode(
        package="bcg_policy_node", executable="policy_node", name="policy_node", namespace="", output="screen",
        parameters=[{
            **interface,
            "policy_path": cfg["policy_path"],
            "release_sport_mode": ParameterValue(cfg["release_sport_mode"], value_type=bool),
            "deadman_timeout_s": ParameterValue(cfg["deadman_timeout_s"], value_type=float),
            "autostart": ParameterValue(cfg["autostart"], value_type=bool),
        }],
    )
    sentinel = Node(
        package="bcg_policy_node", executable="sentinel", name="policy_sentinel", output="screen",
        parameters=[interface], condition=IfCondition(cfg["sentinel"]),
    )
    return LaunchDescription(
        [DeclareLaunchArgument(name, default_value=default, description=doc) for name, (default, doc) in ARGS.items()]
        + [node, sentinel]
    )
