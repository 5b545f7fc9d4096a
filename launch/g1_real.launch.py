"""The real G1: policy node on the ``unitree_sdk`` backend + sentinel (``ros2 launch bcg_policy_node g1_real.launch.py``).

Arguments: ``network_interface`` (required: the NIC on the robot's 192.168.123.x subnet),
``policy`` (required), ``robot_config``, ``safety_config`` (both node and sentinel get the
same files), ``domain_id`` (0 on the robot), ``deadman_timeout_s`` (0: no operator deadman). A file argument is taken as given, else as the
installed file of that name (``policy:=models/g1_squat.onnx`` from any directory), and must
exist at launch. The node list comes from :mod:`bcg_policy_node.bringup`, whose node and
sentinel ``sim2sim.launch.py`` and ``bcg-sim2sim`` start too. This file needs neither the sim
bridge nor MuJoCo; the node and the sentinel check the robot config against its MJCF, so
the robot PC needs ``mujoco`` and the robot description package (``make setup-deploy``).

Nothing moves at launch: the policy node starts unconfigured. With the robot in its
gantry, the operator configures it (``ros2 lifecycle set /policy_node configure``: this
releases sport mode, so **the robot goes limp at configure**), then activates it
(``activate``: it ramps to the default pose and holds), then starts the policy with START on
the remote or ``ros2 service call /policy_node/run std_srvs/srv/Trigger``. L2+B on the remote
damps.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import LifecycleNode, Node

from bcg_policy_node.bringup import G1_REAL_LAUNCH_ARGUMENTS, check_launch_argument_names, g1_real_nodes_from_launch


def _launch_setup(context):
    check_launch_argument_names(context.launch_configurations, G1_REAL_LAUNCH_ARGUMENTS, "g1_real.launch.py")
    args = {a.name: LaunchConfiguration(a.name).perform(context) for a in G1_REAL_LAUNCH_ARGUMENTS}
    actions = []
    for spec in g1_real_nodes_from_launch(args):
        cls = LifecycleNode if spec.lifecycle else Node
        actions.append(cls(package=spec.package, executable=spec.executable, name=spec.name, namespace="",
                           parameters=[spec.parameter_dict()], additional_env=spec.env_dict(), output="screen"))
    return actions


def generate_launch_description():
    return LaunchDescription(
        [DeclareLaunchArgument(a.name, default_value=a.default, description=a.description) for a in G1_REAL_LAUNCH_ARGUMENTS]
        + [OpaqueFunction(function=_launch_setup)]
    )
