"""Sim-to-sim evaluation of exported ONNX policies in plain MuJoCo."""

# the longest rollout bcg-eval and bcg-select-checkpoint take: an hour of simulated time is
# 180,000 control steps per seed and hours of CPU; anything longer is a typo (and --duration
# 1e308 overflowed the step count)
MAX_DURATION_S = 3600.0

# Seeds: checkpoints are chosen on one range and reported on another. bcg-select-checkpoint
# judges on SELECTION_FIRST_SEED.. (20 seeds by default), bcg-eval reports from
# REPORT_FIRST_SEED on, so the two defaults never share a domain draw.
SELECTION_FIRST_SEED = 0
REPORT_FIRST_SEED = 100
