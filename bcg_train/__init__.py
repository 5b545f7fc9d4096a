"""bcg_train."""
