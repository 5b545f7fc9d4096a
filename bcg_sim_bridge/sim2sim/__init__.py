"""bcg-sim2sim: sim-to-sim validation over the real node, sentinel and bridge processes."""
