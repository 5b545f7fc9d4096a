"""The sentinel refuses what the node refuses of its safety config (in this process, no executor)."""

import os

import pytest
from rclpy.parameter import Parameter

from bcg_robot.errors import ConfigError
from bcg_policy_node.sentinel.sentinel_node import SentinelNode


@pytest.mark.parametrize("text,problem", [
    ("joint_limit_margin: 0.5\n", "key 'joint_limit_margin': 0.5 rad puts the default pose of '"),
    ("state_wait_periods: 5\n", "keys 'state_wait_periods' x 'state_period_s': a tick would wait up to 10 ms"),
])
def test_a_safety_config_the_node_refuses_is_refused_by_the_sentinel(tmp_path, rclpy_context, text, problem):
    safety = tmp_path / "safety.yaml"
    safety.write_text(text)
    with pytest.raises(ConfigError) as err:
        SentinelNode(context=rclpy_context, namespace=f"/sentinel_config_{os.getpid()}",
                     parameter_overrides=[Parameter("safety_config", value=str(safety))])
    assert str(err.value).startswith(f"{safety}: {problem}"), str(err.value)
