"""The interview coach: questions generated from the estimator, free-text answers graded against it."""
