"""Learning tasks on the MJX environment core."""
