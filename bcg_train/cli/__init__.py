"""Console entry points of the trainer: bcg-train, bcg-export, bcg-eval, bcg-select-checkpoint,
bcg-benchmark, bcg-claim, bcg-bench-train, bcg-bench-gradients, bcg-make-motions, bcg-motion."""
