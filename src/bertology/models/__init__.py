"""Encoder families and their task heads. Class names match transformers' architectures."""
from .albert import (
    AlbertForMaskedLM, AlbertForMultipleChoice, AlbertForPreTraining, AlbertForQuestionAnswering,
    AlbertForSequenceClassification, AlbertForTokenClassification, AlbertModel,
)
from .base import EncoderModel, PreTrainedModel
from .bert import (
    BertForMaskedLM, BertForMultipleChoice, BertForNextSentencePrediction, BertForPreTraining,
    BertForQuestionAnswering, BertForSequenceClassification, BertForTokenClassification, BertModel,
)
from .config import CONFIGS, AlbertConfig, BertConfig, DistilBertConfig, EncoderConfig, RobertaConfig, config_from_dict
from .distilbert import (
    DistilBertForMaskedLM, DistilBertForMultipleChoice, DistilBertForQuestionAnswering,
    DistilBertForSequenceClassification, DistilBertForTokenClassification, DistilBertModel,
)
from .roberta import (
    RobertaForMaskedLM, RobertaForMultipleChoice, RobertaForQuestionAnswering, RobertaForSequenceClassification,
    RobertaForTokenClassification, RobertaModel,
)

ARCHITECTURES: dict[str, type[PreTrainedModel]] = {
    cls.__name__: cls
    for cls in (
        BertModel, BertForPreTraining, BertForMaskedLM, BertForNextSentencePrediction, BertForSequenceClassification,
        BertForTokenClassification, BertForQuestionAnswering, BertForMultipleChoice,
        RobertaModel, RobertaForMaskedLM, RobertaForSequenceClassification, RobertaForTokenClassification,
        RobertaForQuestionAnswering, RobertaForMultipleChoice,
        AlbertModel, AlbertForPreTraining, AlbertForMaskedLM, AlbertForSequenceClassification,
        AlbertForTokenClassification, AlbertForQuestionAnswering, AlbertForMultipleChoice,
        DistilBertModel, DistilBertForMaskedLM, DistilBertForSequenceClassification, DistilBertForTokenClassification,
        DistilBertForQuestionAnswering, DistilBertForMultipleChoice,
    )
}
BACKBONES = {"bert": BertModel, "roberta": RobertaModel, "albert": AlbertModel, "distilbert": DistilBertModel}
CLASS_PREFIX = {"bert": "Bert", "roberta": "Roberta", "albert": "Albert", "distilbert": "DistilBert"}


def task_class(model_type: str, head: str) -> type[PreTrainedModel]:
    """A family's class for a head: task_class("albert", "ForMaskedLM") is AlbertForMaskedLM."""
    name = CLASS_PREFIX[model_type] + head
    if name not in ARCHITECTURES:
        raise ValueError(f"{model_type} has no {head} head")
    return ARCHITECTURES[name]


def from_config(config: EncoderConfig, architecture: str | None = None) -> PreTrainedModel:
    """Build a randomly initialised model; `architecture` defaults to the config's, else the backbone."""
    name = architecture or (config.architectures[0] if config.architectures else None)
    if name is None:
        return BACKBONES[config.model_type](config)
    if name not in ARCHITECTURES:
        raise ValueError(f"unknown architecture {name!r}; known: {', '.join(ARCHITECTURES)}")
    cls = ARCHITECTURES[name]
    if cls.config_class is not type(config):
        raise ValueError(f"architecture {name} takes a {cls.config_class.__name__}, not a {type(config).__name__}")
    return cls(config)
