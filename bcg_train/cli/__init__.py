"""Console entry points of the trainer: bcg-train, bcg-export, bcg-eval, bcg-benchmark."""
