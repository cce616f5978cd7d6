"""Prompt-based fine-tuning: the template and verbalizer, the label words' pieces in the blank, the
scores the pretrained head gives them (against transformers' own heads), and the job end to end."""

import json

import pytest
import torch
import transformers

from bertology.models import ARCHITECTURES, get_family, load
from bertology.tasks.base import Example
from bertology.tasks.prompt import Prompt, check_template, fill, read_verbalizer, template_fields
from bertology.nn.fused import unfuse

TOL = 1e-5


def test_template_fields_and_checks():
    assert template_fields("{text} It is about [MASK].") == ["text"]
    assert template_fields("{text} ? [MASK] , {pair}") == ["text", "pair"]
    with pytest.raises(ValueError, match="unknown field {label}"):
        template_fields("{text} {label} [MASK]")
    with pytest.raises(ValueError, match="exactly once"):
        check_template("{text} [MASK] [MASK]", pairs=False)
    with pytest.raises(ValueError, match="once as {text}"):
        check_template("It is about [MASK].", pairs=False)
    with pytest.raises(ValueError, match="examples have no pair"):
        check_template("{text} [MASK] {pair}", pairs=False)
    with pytest.raises(ValueError, match="name the pair"):
        check_template("{text} [MASK]", pairs=True)


def test_fill_spans():
    text, spans = fill("{text} ? [MASK] , {pair}", {"text": "ab", "pair": "cd"}, "<mask>")
    assert text == "ab ? <mask> , cd"
    assert [text[a:b] for a, b in (spans["text"], spans["blank"], spans["pair"])] == ["ab", "<mask>", "cd"]


def test_read_verbalizer_json_and_lines(tmp_path):
    (tmp_path / "v.json").write_text(json.dumps({"games": "game", "mail": ["mail", "email"]}))
    assert read_verbalizer(tmp_path / "v.json") == {"games": ["game"], "mail": ["mail", "email"]}
    (tmp_path / "v.tsv").write_text("games\tgame, play\nmail\tmail\n")
    assert read_verbalizer(tmp_path / "v.tsv") == {"games": ["game", "play"], "mail": ["mail"]}
    (tmp_path / "bad.tsv").write_text("games game\n")
    with pytest.raises(ValueError, match=r"bad.tsv:1: expected `label<TAB>"):
        read_verbalizer(tmp_path / "bad.tsv")
    (tmp_path / "empty.json").write_text(json.dumps({"games": []}))
    with pytest.raises(ValueError, match="'games' needs one or more non-empty words"):
        read_verbalizer(tmp_path / "empty.json")


def test_label_word_pieces_are_those_in_the_blank(bpe_tokenizer, minilm_tokenizer):
    # WordPiece: "games" whole; a rare word in pieces, exactly as the tokenizer cuts it after a space
    p = Prompt.build("{text} It is about [MASK].", {"a": ["games"], "b": ["zythum"]}, minilm_tokenizer, "mlm")
    assert p.mask_token == "[MASK]"
    assert p.label_word_ids[0] == [minilm_tokenizer.encode("games", add_special_tokens=False).ids]
    assert p.label_word_ids[1] == [minilm_tokenizer.encode("zythum", add_special_tokens=False).ids]
    assert len(p.label_word_ids[1][0]) > 1
    # byte-level BPE: the word after a space takes its leading-space form, as it would in running text
    q = Prompt.build("{text} It is about [MASK].", {"a": ["games"]}, bpe_tokenizer, "mlm")
    assert q.mask_token == "<mask>"
    spaced = bpe_tokenizer.encode(" games", add_special_tokens=False).ids
    assert q.label_word_ids[0] == [spaced] != [bpe_tokenizer.encode("games", add_special_tokens=False).ids]


def test_long_inputs_lose_text_never_the_blank(minilm_tokenizer):
    p = Prompt.build("{text} It is about [MASK].", {"a": ["games"], "b": ["mail"]}, minilm_tokenizer, "mlm")
    long = Example(" ".join(["word"] * 100), label="a", where="f:1")
    short = Example("a puzzle game", label="b", where="f:2")
    f = p.featurize([long, short], minilm_tokenizer, 16, torch.tensor([0, 1]))
    assert f.tensors["input_ids"].shape == (2, 16) and f.truncated == 1
    assert (f.tensors["input_ids"] == p.mask_token_id).sum(1).tolist() == [1, 1]
    assert minilm_tokenizer.decode(f.tensors["input_ids"][0].tolist()).endswith("it is about.")  # [MASK] is special
    with pytest.raises(ValueError, match="f:2: the template .* alone is longer than --max-length 6"):
        p.featurize([short], minilm_tokenizer, 6, None)


def _tiny(family, head, vocab):
    cfg = get_family(family).preset("tiny", vocab_size=vocab)
    torch.manual_seed(0)
    return ARCHITECTURES[get_family(family).class_prefix + head](cfg).eval()


@pytest.mark.parametrize("family", ["bert", "roberta", "albert", "distilbert"])
def test_mlm_prompt_scores_are_the_masked_lm_logits_of_the_label_words(family, tmp_path, minilm_tokenizer):
    words = {"games": ["games"], "mail": ["mail", "zythum"]}  # two words: their pieces pooled
    prompt = Prompt.build("{text} It is about [MASK].", words, minilm_tokenizer, "mlm")
    mlm = _tiny(family, "ForMaskedLM", minilm_tokenizer.vocab_size)
    mlm.save(tmp_path)
    ref = transformers.AutoModelForMaskedLM.from_pretrained(tmp_path).eval()
    config = mlm.config.with_labels(list(words))
    config.extra["bertology_prompt"] = prompt.to_dict()
    ours = ARCHITECTURES[get_family(family).class_prefix + "ForPromptClassification"](config).eval()
    ours.load_state_dict(mlm.state_dict())
    examples = [Example("a puzzle game with falling blocks"), Example("an email client")]
    f = prompt.featurize(examples, minilm_tokenizer, 32, None)
    inputs = {k: v for k, v in f.tensors.items() if k != "token_type_ids" or family in ("bert", "albert")}
    with torch.no_grad():
        logits = ours(**inputs).logits
        theirs = ref(**inputs).logits[inputs["input_ids"] == prompt.mask_token_id]  # (B, V)
    pieces = [[p for w in ws for p in w] for ws in prompt.label_word_ids]
    expected = torch.stack([theirs[:, ids].mean(1) for ids in pieces], 1)
    assert logits.shape == (2, 2)
    assert (logits - expected).abs().max() <= TOL
    # saved, the prompt classifier is still a masked LM to transformers, verbalizer in config.json
    ours.save(tmp_path / "prompt")
    again, info = transformers.AutoModelForMaskedLM.from_pretrained(tmp_path / "prompt", output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"]
    reloaded = load(tmp_path / "prompt").eval()
    unfuse(reloaded)  # load() swaps in the fused fp32 layers; the same kernels as `ours`, for equality
    with torch.no_grad():
        assert torch.equal(reloaded(**inputs).logits, logits)


def test_electra_prompt_scores_minus_mean_replaced_logit_of_each_word(minilm_tokenizer, tmp_path):
    words = {"games": ["games"], "mail": ["zythum"]}
    prompt = Prompt.build("{text} It is about [MASK].", words, minilm_tokenizer, "rtd")
    disc = _tiny("electra", "ForPreTraining", minilm_tokenizer.vocab_size)
    disc.save(tmp_path)
    ref = transformers.ElectraForPreTraining.from_pretrained(tmp_path).eval()
    config = disc.config.with_labels(list(words))
    config.extra["bertology_prompt"] = prompt.to_dict()
    ours = ARCHITECTURES["ElectraForPromptClassification"](config).eval()
    ours.load_state_dict(disc.state_dict())
    f = prompt.featurize(
        [Example("a puzzle game"), Example("an email client for the terminal")], minilm_tokenizer, 32, None
    )
    ids, mask, candidate = f.tensors["input_ids"], f.tensors["attention_mask"], f.tensors["candidate_mask"]
    assert ids.shape[:2] == (2, 2) and candidate.sum(-1).tolist() == [[1, 3], [1, 3]]  # "zythum": 3 pieces
    with torch.no_grad():
        logits = ours(**f.tensors).logits
        replaced = ref(input_ids=ids.flatten(0, 1), attention_mask=mask.flatten(0, 1)).logits.view(ids.shape)
    expected = -(replaced * candidate).sum(-1) / candidate.sum(-1)
    assert (logits - expected).abs().max() <= TOL
    # the word in the blank of copy c is class c's
    assert minilm_tokenizer.decode(ids[0, 0][candidate[0, 0].bool()].tolist()) == "games"
    # a batch of the short text is cut to its own longest copy, the word marks with it, and scores the same
    short = f.batch([0])
    width = int(mask[0].sum(-1).max())
    assert width < ids.shape[-1] and {k: v.shape[-1] for k, v in short.items() if v.dim() == 3} == dict.fromkeys(
        ("input_ids", "attention_mask", "token_type_ids", "candidate_mask"), width
    )
    with torch.no_grad():
        assert (ours(**short).logits - logits[:1]).abs().max() <= TOL


@pytest.mark.integration
def test_finetune_prompt_saves_reloads_predicts_and_serves(tmp_path):
    """A tiny BERT pretraining checkpoint (MLM + NSP heads), `finetune --method prompt` on the demo's data,
    then predict through the pipeline that `predict`, `evaluate` and `serve` share."""
    from bertology.tasks.finetune import FinetuneOptions, finetune, load_finetuned
    from bertology.tasks.pipeline import Pipeline
    from bertology.tokenizers import train

    data = __import__("pathlib").Path(__file__).resolve().parents[2] / "data" / "debian-sections"
    texts = [line.split("\t")[1] for line in (data / "train.tsv").read_text().splitlines()[1:]]
    tok = train(lines=texts, family="bert", vocab_size=600, show_progress=False)
    pretrained = _tiny("bert", "ForPreTraining", tok.vocab_size)
    pretrained.save(tmp_path / "bert")
    tok.save(tmp_path / "bert" / "tokenizer.json")
    options = FinetuneOptions(
        model=str(tmp_path / "bert"),
        task="classify",
        train=str(data / "train.tsv"),
        dev=str(data / "dev.tsv"),
        out_dir=str(tmp_path / "out"),
        labels_per_class=4,
        epochs=2,
        lr=1e-3,
        max_length=24,
        method="prompt",
        quiet=True,
    )
    summary = finetune(options)
    assert summary["method"] == "prompt" and summary["architecture"] == "BertForPromptClassification"
    model, task, tokenizer, _ = load_finetuned(tmp_path / "out")
    assert task.prompt is not None and task.head == "ForPromptClassification"
    # the MLM head came from the checkpoint, not from random: before training it equals the pretrained one
    assert model.config.extra["bertology_prompt"]["label_words"]["games"] == ["games"]
    predictions = Pipeline.load(tmp_path / "out")(["a puzzle game with falling blocks", "an email client"])
    assert len(predictions) == 2 and predictions[0].label in summary["labels"]
    # and the server answers /predict with the same classes, as for any classifier
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from bertology.serve.app import create_app
    from bertology.serve.engine import Engine
    from bertology.serve.options import ServeOptions

    o = ServeOptions(model=str(tmp_path / "out"))
    with TestClient(create_app(Engine.load(o.model, o.tokenizer, o.pooling, o.bf16), o)) as client:
        served = client.post("/predict", json={"inputs": ["a puzzle game with falling blocks"]}).json()[0]
    assert served[0]["label"] == predictions[0].label
    assert served[0]["score"] == pytest.approx(predictions[0].probability, abs=1e-5)
