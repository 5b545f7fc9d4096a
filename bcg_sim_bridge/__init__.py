"""bcg_sim_bridge."""
