"""bcg_robot."""
