"""Console entry points of the bridge package: argument parsing and wiring only (``bcg-sim2sim``,
``bcg-bench-node``, ``bcg-bench-bridge``). The bridge node itself (``sim_bridge``) keeps its
``main`` in :mod:`bcg_sim_bridge.bridge_node`, as a ROS node executable."""
