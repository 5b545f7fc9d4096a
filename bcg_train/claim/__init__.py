"""The claim experiment on the hopper test bench (protocol, runner, report); CLI: ``bcg-claim``."""
