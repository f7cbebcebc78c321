"""The mock interview: a chain of questions on one model and card, follow-ups that probe a wrong answer
from the estimator's components, a stored scorecard (docs/reference.md, "Mock interview")."""
