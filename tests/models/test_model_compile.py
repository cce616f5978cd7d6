"""`compile_blocks()` / `load(compile=True)`: the same outputs as the eager model, padded or not."""

import pytest
import torch

import bertology
from bertology.models import AlbertConfig, AlbertModel, BertConfig, BertModel


def test_compiled_bert_loaded_with_compile_equals_the_eager_model(tmp_path):
    torch.manual_seed(0)
    eager = BertModel(BertConfig.preset("tiny", vocab_size=500)).eval()
    eager.save(tmp_path)
    compiled = bertology.load(tmp_path, compile=True)
    ids = torch.randint(5, 500, (3, 24))
    for mask in (torch.ones(3, 24, dtype=torch.long), (torch.arange(24) < torch.tensor([[24], [9], [17]])).long()):
        with torch.inference_mode():
            a = eager(input_ids=ids, attention_mask=mask).last_hidden_state
            b = compiled(input_ids=ids, attention_mask=mask).last_hidden_state
        assert (a - b)[mask.bool()].abs().max() < 1e-5


def test_a_model_without_blocks_is_refused():
    class Plain(bertology.models.base.PreTrainedModel):
        pass

    with pytest.raises(ValueError, match="Plain has no blocks to compile"):
        Plain(BertConfig.preset("tiny")).compile_blocks()


@pytest.mark.slow
def test_compiled_albert_shares_its_compiled_blocks():
    torch.manual_seed(0)
    eager = AlbertModel(AlbertConfig.preset("tiny", vocab_size=300)).eval()
    compiled = AlbertModel(AlbertConfig.preset("tiny", vocab_size=300)).eval()
    compiled.load_state_dict(eager.state_dict())
    compiled.compile_blocks()
    ids = torch.randint(5, 300, (2, 16))
    with torch.inference_mode():
        assert torch.allclose(
            eager(input_ids=ids).last_hidden_state, compiled(input_ids=ids).last_hidden_state, atol=1e-5
        )
