"""The bridge's simulator-control topics (ROS 2, both interfaces): what only a simulator has.

``sim/band``          std_msgs/Bool: true engages the elastic band, false releases it
``sim/push``          std_msgs/Float64MultiArray ``[fx, fy, fz, duration_s]``: force on the pelvis (N, world)
``sim/state_dropout`` std_msgs/Float64: stop publishing state for this many seconds
``sim/corrupt_crc``   std_msgs/Float64: seal ``rt/lowstate`` with a wrong CRC for this many seconds (unitree_sdk;
                      refused on ros2, whose state has no CRC)
``sim/remote``        std_msgs/UInt16: wireless-remote button mask to report (unitree_sdk), held until changed
``sim/inject``        std_msgs/String: a state fault of :data:`bcg_sim_bridge.state_faults.INJECTIONS`, held
                      until ``clear``
``sim/status``        std_msgs/String out, 5 Hz: JSON of the command counters, the injection (its start time) and
                      ``pacing``: how far the loop runs behind real time (last and largest lag, overruns, resyncs)
``sim/received``      std_msgs/Float64MultiArray out, only with ``echo_commands``: every command the drives got,
                      ``[t_receive, *q, *dq, *tau, *kp, *kd]`` (CLOCK_MONOTONIC seconds, comparable across processes)
"""

SIM_BAND_TOPIC = "sim/band"
SIM_PUSH_TOPIC = "sim/push"
SIM_DROPOUT_TOPIC = "sim/state_dropout"
SIM_CORRUPT_CRC_TOPIC = "sim/corrupt_crc"
SIM_REMOTE_TOPIC = "sim/remote"
SIM_INJECT_TOPIC = "sim/inject"
SIM_STATUS_TOPIC = "sim/status"
SIM_RECEIVED_TOPIC = "sim/received"
