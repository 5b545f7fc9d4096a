"""Sim-to-sim: MuJoCo sim bridge + policy node + sentinel (``ros2 launch bcg_policy_node sim2sim.launch.py``).

Arguments: ``interface:=ros2|unitree_sdk``, ``policy``, ``robot_config``, ``bridge_config``,
``sdk_domain``. The node list comes from :mod:`bcg_sim_bridge.node_list` (the bridge, plus the
policy node and sentinel of :mod:`bcg_policy_node.bringup`), the same description
``bcg-sim2sim`` starts without launch_ros. The policy node is a lifecycle
node; this file configures and activates it (it then ramps to the default pose and
holds; RUN needs the operator: ``ros2 service call /policy_node/run std_srvs/srv/Trigger``).
Its processes discover only this machine's (``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST``):
on a robot's network they would answer that robot's operator calls under the same names.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, EmitEvent, OpaqueFunction, RegisterEventHandler
from launch.events import matches_action
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import LifecycleNode, Node
from launch_ros.event_handlers import OnStateTransition
from launch_ros.events.lifecycle import ChangeState
from lifecycle_msgs.msg import Transition

from bcg_policy_node.bringup import check_launch_argument_names
from bcg_sim_bridge.node_list import SIM2SIM_LAUNCH_ARGUMENTS, resolve_launch_policy, sim2sim_nodes_from_launch


def _actions(spec):
    common = dict(package=spec.package, executable=spec.executable, name=spec.name, namespace="",
                  parameters=[spec.parameter_dict()], additional_env=spec.env_dict(), output="screen")
    if not spec.lifecycle:
        return [Node(**common)]
    node = LifecycleNode(**common)
    configure = EmitEvent(event=ChangeState(lifecycle_node_matcher=matches_action(node),
                                            transition_id=Transition.TRANSITION_CONFIGURE))
    # after configure only: a deactivate (also goal "inactive") must leave the node inactive
    activate = RegisterEventHandler(OnStateTransition(
        target_lifecycle_node=node, start_state="configuring", goal_state="inactive",
        entities=[EmitEvent(event=ChangeState(lifecycle_node_matcher=matches_action(node),
                                              transition_id=Transition.TRANSITION_ACTIVATE))]))
    return [node, activate, configure]


def _launch_setup(context):
    check_launch_argument_names(context.launch_configurations, SIM2SIM_LAUNCH_ARGUMENTS, "sim2sim.launch.py")
    args = {a.name: LaunchConfiguration(a.name).perform(context) for a in SIM2SIM_LAUNCH_ARGUMENTS}
    args["policy"] = resolve_launch_policy(args["policy"], args["robot_config"])
    return [action for spec in sim2sim_nodes_from_launch(args) for action in _actions(spec)]


def generate_launch_description():
    return LaunchDescription(
        [DeclareLaunchArgument(a.name, default_value=a.default, description=a.description) for a in SIM2SIM_LAUNCH_ARGUMENTS]
        + [OpaqueFunction(function=_launch_setup)]
    )
