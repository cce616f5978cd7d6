"""The pretraining objectives by name (`pretrain --objective`): one line each.

A new objective is one file under train/ with its objective class and one line here (and its name in
data/recipe.py's OBJECTIVES, with the head a --init checkpoint is checked against). The Trainer
needs of it `totals(batch)` and `objective(model, micro_batch, totals) -> (loss, metrics)`, the job
`evaluate(model, batches)` (train/mlm.py is the smallest example); `save` / `load` where it carries
state across steps (train/plm.py); a sentence objective adds what train/sentences.py lists.
docs/development.md ("Adding a pretraining objective") has the whole list.

    >>> from types import SimpleNamespace
    >>> type(objective_for("simcse", SimpleNamespace(temperature=None))).__name__
    'SimCSEObjective'
"""

from __future__ import annotations

from typing import Any, Callable

from ..data.recipe import PLM, RTD, SIMCSE, TSDAE
from .mlm import PretrainingObjective
from .plm import PermutationLMObjective
from .rtd import ReplacedTokenDetectionObjective
from .simcse import SimCSEObjective
from .tsdae import TSDAEObjective

DEFAULT_DISCRIMINATOR_WEIGHT = 50.0  # ELECTRA's λ (the paper's)


def _rtd(o) -> ReplacedTokenDetectionObjective:
    weight = DEFAULT_DISCRIMINATOR_WEIGHT if o.discriminator_weight is None else o.discriminator_weight
    return ReplacedTokenDetectionObjective(weight, o.sampling_temperature or 1.0)


REGISTRY: dict[str, Callable[[Any], Any]] = {
    "mlm": lambda o: PretrainingObjective(),
    "mlm+nsp": lambda o: PretrainingObjective(),  # the pair term comes with the batch's labels
    "mlm+sop": lambda o: PretrainingObjective(),
    RTD: _rtd,
    PLM: lambda o: PermutationLMObjective(),
    SIMCSE: SimCSEObjective.from_options,
    TSDAE: TSDAEObjective.from_options,
}


def objective_for(name: str, options) -> Any:
    """The objective `name` with its settings from the job's options (train.pretrain.PretrainOptions)."""
    if name not in REGISTRY:
        raise ValueError(f"unknown objective {name!r}; choose one of {', '.join(REGISTRY)}")
    return REGISTRY[name](options)


def is_sentence_objective(objective) -> bool:
    """Whether the objective trains the encoder alone on texts (train/sentences.py's interface)."""
    return hasattr(objective, "prepare") and hasattr(objective, "encoder")
