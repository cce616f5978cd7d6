"""Encoder families and their task heads. Class names match transformers' architectures.

Layout: config.py (one dataclass per family) → the model files (bert.py and its diffs; xlnet.py
and its beam QA head, xlnet_qa.py) and heads.py → family.py (one record per family) and
hf_names.py (transformers' parameter names) → checkpoint.py (Hugging Face layout on disk) →
auto.py (the class a directory holds). electra.py adds ElectraPair, the generator and discriminator
that pretrain together.
"""

from .albert import (
    AlbertForMaskedLM,
    AlbertForMultipleChoice,
    AlbertForPreTraining,
    AlbertForQuestionAnswering,
    AlbertForSequenceClassification,
    AlbertForTokenClassification,
    AlbertModel,
)
from .auto import (
    ARCHITECTURES,
    from_config,
    load,
    load_backbone,
    load_for_task,
    load_with_heads,
    task_class,
    task_model,
)
from .base import EncoderModel, PreTrainedModel
from .bert import (
    BertForMaskedLM,
    BertForMultipleChoice,
    BertForNextSentencePrediction,
    BertForPreTraining,
    BertForQuestionAnswering,
    BertForSequenceClassification,
    BertForTokenClassification,
    BertModel,
)
from .checkpoint import CheckpointError, check_tokenizer, read_config, read_weights, save
from .config import (
    AlbertConfig,
    BertConfig,
    DistilBertConfig,
    ElectraConfig,
    EncoderConfig,
    RobertaConfig,
    XLNetConfig,
)
from .distilbert import (
    DistilBertForMaskedLM,
    DistilBertForMultipleChoice,
    DistilBertForQuestionAnswering,
    DistilBertForSequenceClassification,
    DistilBertForTokenClassification,
    DistilBertModel,
)
from .electra import (
    ElectraForMaskedLM,
    ElectraForMultipleChoice,
    ElectraForPreTraining,
    ElectraForQuestionAnswering,
    ElectraForSequenceClassification,
    ElectraForTokenClassification,
    ElectraModel,
    ElectraPair,
)
from .family import FAMILIES, PRETRAINABLE, Family, config_from_dict, family_of, get_family, resolve_preset
from .roberta import (
    RobertaForMaskedLM,
    RobertaForMultipleChoice,
    RobertaForQuestionAnswering,
    RobertaForSequenceClassification,
    RobertaForTokenClassification,
    RobertaModel,
)
from .xlnet import (
    XLNetForMultipleChoice,
    XLNetForQuestionAnsweringSimple,
    XLNetForSequenceClassification,
    XLNetForTokenClassification,
    XLNetLMHeadModel,
    XLNetModel,
)
from .xlnet_qa import XLNetForQuestionAnswering
