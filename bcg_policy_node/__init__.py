"""bcg_policy_node."""
