"""Training: the shared Trainer, objectives, checkpoints, data parallelism."""
from .objectives import PretrainingObjective, evaluate_pretraining
from .trainer import Trainer, TrainingArguments, linear_schedule, parameter_groups

__all__ = ["Trainer", "TrainingArguments", "PretrainingObjective", "evaluate_pretraining", "linear_schedule", "parameter_groups"]
