"""Training: the shared Trainer, objectives, checkpoints, data parallelism."""

from .arguments import TrainingArguments
from .mlm import PretrainingObjective, evaluate_pretraining
from .schedules import budget_schedule, linear_schedule, schedule, triangle_schedule
from .trainer import Trainer, parameter_groups

__all__ = [
    "Trainer",
    "TrainingArguments",
    "PretrainingObjective",
    "evaluate_pretraining",
    "linear_schedule",
    "budget_schedule",
    "triangle_schedule",
    "schedule",
    "parameter_groups",
]
