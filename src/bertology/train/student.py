"""A student initialised from its teacher (DistilBERT's recipe): word and position embeddings and
their LayerNorm, a subset of the teacher's layers, and the MLM head, copied; token types and the
pooler dropped for a DistilBERT student.

    >>> default_layers(12, 6)            # DistilBERT's own choice
    [0, 2, 4, 7, 9, 11]
"""

from __future__ import annotations

import dataclasses

import torch

from ..models import PreTrainedModel, get_family, task_class


def parts(model: PreTrainedModel):
    """(backbone, MLM head or None) of a bare backbone or a task model."""
    return (model.backbone, getattr(model, "mlm", None)) if hasattr(model, "backbone") else (model, None)


STUDENTS = ("distilbert", "bert", "roberta")
# the student kinds a teacher family can give (layer copies need the same layer and embedding shapes)
_STUDENTS_OF = {"bert": ("distilbert", "bert"), "distilbert": ("distilbert",), "roberta": ("roberta",)}


def default_layers(teacher_depth: int, student_depth: int) -> list[int]:
    """Teacher layers spread evenly from the first to the last: DistilBERT's choice for 12 → 6.

    >>> default_layers(12, 6), default_layers(6, 3), default_layers(4, 1)
    ([0, 2, 4, 7, 9, 11], [0, 3, 5], [0])
    """
    if student_depth == 1:
        return [0]
    return [int(i * (teacher_depth - 1) / (student_depth - 1) + 0.5) for i in range(student_depth)]


def check_layers(layers: list[int], teacher_depth: int) -> None:
    if not layers:
        raise ValueError("--layers: give at least one teacher layer")
    if any(not 0 <= i < teacher_depth for i in layers):
        raise ValueError(f"--layers {','.join(map(str, layers))}: the teacher has layers 0..{teacher_depth - 1}")
    if any(b <= a for a, b in zip(layers, layers[1:])):
        raise ValueError(f"--layers {','.join(map(str, layers))}: must be increasing")


def init_student(
    teacher: PreTrainedModel, student: str = "distilbert", layers: list[int] | None = None, depth: int | None = None
) -> PreTrainedModel:
    """A `student` ForMaskedLM model initialised from `teacher`: word and position embeddings and
    their LayerNorm, teacher layer layers[i] as layer i, and the MLM head when the teacher has one
    (the decoder stays tied to the embeddings). A DistilBERT student drops token types and pooler."""
    config = teacher.config
    allowed = _STUDENTS_OF.get(config.model_type, ())
    if student not in allowed:
        raise ValueError(
            f"--student {student}: a {config.model_type} teacher gives a "
            f"{' or '.join(allowed) or 'no'} student (its layers are copied, so the shapes must match)"
        )
    L = config.num_hidden_layers
    layers = list(layers) if layers is not None else default_layers(L, depth or max(1, L // 2))
    check_layers(layers, L)
    if student == config.model_type:
        student_config = dataclasses.replace(config, num_hidden_layers=len(layers), architectures=None)
    else:  # DistilBERT from BERT: the same sizes, no token types
        student_config = get_family(student).config(
            **{f: getattr(config, f) for f in _SHARED_FIELDS}, num_hidden_layers=len(layers)
        )
    model = task_class(student, "ForMaskedLM")(student_config)
    backbone, mlm = parts(teacher)
    source = backbone.state_dict()
    target = model.state_dict()
    with torch.no_grad():
        for name, tensor in target.items():
            if name.startswith("backbone.encoder.layers."):
                i, rest = name[len("backbone.encoder.layers.") :].split(".", 1)
                tensor.copy_(source[f"encoder.layers.{layers[int(i)]}.{rest}"])
            elif name.startswith("backbone.") and name[len("backbone.") :] in source:
                tensor.copy_(source[name[len("backbone.") :]])
            elif name.startswith("mlm.") and mlm is not None and name != "mlm.decoder.weight":
                tensor.copy_(mlm.state_dict()[name[len("mlm.") :]])
    return model


_SHARED_FIELDS = (
    "vocab_size",
    "hidden_size",
    "num_attention_heads",
    "intermediate_size",
    "hidden_act",
    "hidden_dropout_prob",
    "attention_probs_dropout_prob",
    "max_position_embeddings",
    "initializer_range",
    "pad_token_id",
)
