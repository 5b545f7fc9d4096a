"""Policy learning: SHAC (first-order, through the simulator) and its building blocks."""
