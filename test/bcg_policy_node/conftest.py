"""Policy-node tests: an rclpy context of the test's own, for nodes run in this process."""

import pytest
import rclpy


@pytest.fixture
def rclpy_context():
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        yield context
    finally:
        rclpy.shutdown(context=context)
