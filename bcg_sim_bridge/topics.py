"""The bridge's simulator-control topics (ROS 2, both interfaces): what only a simulator has.

``sim/band``          std_msgs/Bool: true engages the elastic band, false releases it
``sim/push``          std_msgs/Float64MultiArray ``[fx, fy, fz, duration_s]``: force on the pelvis (N, world)
``sim/state_dropout`` std_msgs/Float64: stop publishing state for this many seconds
``sim/corrupt_crc``   std_msgs/Float64: seal ``rt/lowstate`` with a wrong CRC for this many seconds
``sim/remote``        std_msgs/UInt16: wireless-remote button mask to report (unitree_dds), held until changed
"""

SIM_BAND_TOPIC = "sim/band"
SIM_PUSH_TOPIC = "sim/push"
SIM_DROPOUT_TOPIC = "sim/state_dropout"
SIM_CORRUPT_CRC_TOPIC = "sim/corrupt_crc"
SIM_REMOTE_TOPIC = "sim/remote"
