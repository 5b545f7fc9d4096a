"""Console entry points of the robot package: argument parsing and printing only (``bcg-robot-info``)."""
