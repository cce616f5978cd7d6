"""Training objectives: a loss per micro-batch, divided by counts over the *global* batch.

PretrainingObjective (MLM + NSP / SOP), ReplacedTokenDetectionObjective (ELECTRA's generator MLM +
λ·discriminator BCE over every token), DistillationObjective (DistilBERT's triple loss:
α_ce·T²·KL of the softened predictions + α_mlm·CE + α_cos·(1 − cos) of the last hidden states,
optionally + α_mse·MSE of the logits; a teacher without an MLM head teaches through the hidden
states alone), and SentenceDistillationObjective (Reimers & Gurevych, 2020: a student with its own
tokenizer matches the teacher's sentence embedding through a linear projection).

Dividing by the global count (not the micro-batch's) makes the summed gradient of any split into
micro-batches and ranks equal to the gradient of the whole batch: the basis of exact gradient
accumulation and of data-parallel equivalence.

`totals` reads the global batch on the CPU; a micro-batch's metrics are 0-d tensors on the model's
device (the Trainer reads them at log steps, so a step never waits for the GPU to report them);
the evaluations below move their batches to the model's device and return floats.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

import torch
import torch.nn.functional as F

from ..models.base import PreTrainedModel
from ..models.heads import IGNORE, mean_pool
from .device import model_device, to_device
from .student import parts

PAIR_LABELS = ("next_sentence_label", "sentence_order_label")


class PretrainingObjective:
    """MLM (+ NSP or SOP when the batch carries their labels), MLM logits only at masked positions."""

    def totals(self, batch: dict[str, torch.Tensor]) -> dict[str, int]:
        return {"masked": max(1, int((batch["labels"] != IGNORE).sum())), "sequences": batch["labels"].shape[0]}

    def __call__(self, model, batch: dict[str, torch.Tensor], totals: dict[str, int]):
        # The heads compute the mean losses (MLM over this micro-batch's masked tokens, the pair
        # objective over its sequences); weighting each by its share of the global count gives the
        # global mean without computing the cross-entropy a second time.
        out = model(**batch, sparse_prediction=True)
        labels = batch["labels"]
        logits = out.prediction_logits if hasattr(out, "prediction_logits") else out.logits  # (M, V)
        targets = labels[labels != IGNORE]  # (M,)
        mlm_mean = out.mlm_loss if hasattr(out, "mlm_loss") else out.loss
        # A micro-batch with no masked token contributes nothing (its mean would be NaN).
        loss = mlm_mean * (len(targets) / totals["masked"]) if len(targets) else logits.sum() * 0.0
        metrics = {
            "mlm_loss": loss.detach(),
            "mlm_accuracy": (logits.argmax(-1) == targets).sum() / totals["masked"],
        }
        pair_name = next((k for k in PAIR_LABELS if k in batch), None)
        if pair_name is not None:
            pair_logits = out.seq_relationship_logits if out.seq_relationship_logits is not None else out.sop_logits
            pair_term = out.pair_loss * (pair_logits.shape[0] / totals["sequences"])
            loss = loss + pair_term
            metrics["pair_loss"] = pair_term.detach()
            metrics["pair_accuracy"] = (pair_logits.argmax(-1) == batch[pair_name].view(-1)).sum() / totals["sequences"]
        metrics["loss"] = metrics["mlm_loss"] + metrics.get("pair_loss", 0.0)
        return loss, metrics


@torch.no_grad()
def evaluate_pretraining(model, batches: Iterable[dict[str, torch.Tensor]]) -> dict[str, float]:
    """Held-out MLM accuracy and perplexity (exp of the mean masked-token loss), NSP / SOP accuracy."""
    objective = PretrainingObjective()
    sums: dict[str, float] = {}
    masked = sequences = 0
    device = model_device(model)
    for batch in batches:
        totals = objective.totals(batch)
        _, m = objective(model, to_device(batch, device), totals)
        m = {k: float(v) for k, v in m.items()}
        masked += totals["masked"]
        sequences += totals["sequences"]
        sums["mlm_loss"] = sums.get("mlm_loss", 0.0) + m["mlm_loss"] * totals["masked"]
        sums["mlm_accuracy"] = sums.get("mlm_accuracy", 0.0) + m["mlm_accuracy"] * totals["masked"]
        if "pair_accuracy" in m:
            sums["pair_accuracy"] = sums.get("pair_accuracy", 0.0) + m["pair_accuracy"] * totals["sequences"]
    if masked == 0:
        raise ValueError("evaluation data has no masked tokens")
    out = {"mlm_loss": sums["mlm_loss"] / masked, "mlm_accuracy": sums["mlm_accuracy"] / masked}
    out["perplexity"] = math.exp(min(out["mlm_loss"], 50.0))
    if "pair_accuracy" in sums:
        out["pair_accuracy"] = sums["pair_accuracy"] / sequences
    return out


# ---- replaced-token detection (ELECTRA) --------------------------------------------------------------


def sample_tokens(logits: torch.Tensor, draws: torch.Tensor) -> torch.Tensor:
    """One token per row of (M, V) logits, sampled from their softmax by inverting its cumulative sum at
    the uniform `draws` (M,): the sample is a function of the draws alone, whatever device or batch split.

    >>> sample_tokens(torch.tensor([[0.0, 0.0], [0.0, 0.0], [-1e9, 0.0]]), torch.tensor([0.2, 0.7, 0.2])).tolist()
    [0, 1, 1]
    """
    cumulative = torch.softmax(logits.float(), -1).cumsum(-1)  # (M, V)
    cumulative = cumulative / cumulative[:, -1:]  # the last entry exactly 1, whatever the rounding of the sum
    picked = torch.searchsorted(cumulative, draws.to(cumulative.dtype).unsqueeze(-1), right=True).squeeze(-1)
    return picked.clamp(max=logits.shape[-1] - 1)


@dataclass
class Detection:
    """One pass of an ElectraPair over a batch: the generator's MLM at the masked positions, its
    samples put in their place, and the discriminator's logits over the corrupted text."""

    gen_loss: torch.Tensor  # 0-d: the mean MLM loss over this batch's masked tokens (with its gradient)
    gen_logits: torch.Tensor  # (M, V) float32, detached
    targets: torch.Tensor  # (M,) the original tokens at the masked positions
    sampled: torch.Tensor  # (M,) the generator's samples there
    disc_logits: torch.Tensor  # (B, T) "replaced?" logits (with their gradient)
    replaced: torch.Tensor  # (B, T) bool: the corrupted token differs from the original (real tokens only)
    real: torch.Tensor  # (B, T) bool: not padding


def detect_replacements(model, batch: dict[str, torch.Tensor], temperature: float = 1.0) -> Detection:
    """The generator fills the masked slots with samples from softmax(logits / `temperature`) (no
    gradient through the sample); the discriminator reads the result. A sample equal to the original
    token counts as original."""
    labels, real = batch["labels"], batch["attention_mask"].bool()
    masked = labels != IGNORE  # (B, T)
    inputs = {k: batch[k] for k in ("attention_mask", "token_type_ids") if k in batch}
    gen = model.generator(input_ids=batch["input_ids"], labels=labels, sparse_prediction=True, **inputs)
    with torch.no_grad():
        scores = gen.logits.detach().float()  # (M, V); float32: argmax and softmax of bf16 are slow on CPUs
        sampled = sample_tokens(scores / temperature, batch["replacement_draws"][masked])  # (M,)
        original = torch.where(masked, labels, batch["input_ids"])  # (B, T): the text before masking
        corrupted = original.masked_scatter(masked, sampled)
        replaced = (corrupted != original) & real  # (B, T)
    disc_logits = model.discriminator(input_ids=corrupted, **inputs).logits  # (B, T)
    return Detection(gen.loss, scores, labels[masked], sampled, disc_logits, replaced, real)


class ReplacedTokenDetectionObjective:
    """ELECTRA: the generator learns MLM at the masked positions; its samples fill them (no gradient
    through the sample); the discriminator learns, at every real token, whether it was replaced:

        loss = MLM(generator) + λ · BCE(discriminator),   λ = 50 (the paper's)

    the MLM mean over the global batch's masked tokens, the BCE over its real tokens. A sample equal
    to the original token counts as original. The model is a models.electra.ElectraPair; the batch is
    the masker's (input_ids masked, labels = the originals there, replacement_draws). `temperature`
    divides the generator's logits before sampling (1: google-research/electra's default).
    """

    def __init__(self, discriminator_weight: float = 50.0, temperature: float = 1.0):
        if not temperature > 0:
            raise ValueError(f"sampling temperature {temperature}: must be > 0")
        self.weight, self.temperature = discriminator_weight, temperature

    def totals(self, batch: dict[str, torch.Tensor]) -> dict[str, int]:
        return {
            "masked": max(1, int((batch["labels"] != IGNORE).sum())),
            "real": max(1, int(batch["attention_mask"].sum())),
        }

    def __call__(self, model, batch: dict[str, torch.Tensor], totals: dict[str, int]):
        d = detect_replacements(model, batch, self.temperature)
        m = len(d.targets)
        # A micro-batch with no masked token contributes nothing to the MLM term (its mean would be NaN).
        gen_loss = d.gen_loss * (m / totals["masked"]) if m else d.gen_logits.sum() * 0.0
        bce = F.binary_cross_entropy_with_logits(
            d.disc_logits[d.real].float(), d.replaced[d.real].float(), reduction="sum"
        )
        disc_loss = bce / totals["real"]
        loss = gen_loss + self.weight * disc_loss
        metrics = {
            "generator_mlm_loss": gen_loss.detach(),
            "generator_mlm_accuracy": (d.gen_logits.argmax(-1) == d.targets).sum() / totals["masked"],
            "discriminator_loss": disc_loss.detach(),
            "discriminator_accuracy": ((d.disc_logits.detach() > 0) == d.replaced)[d.real].sum() / totals["real"],
            "replaced_share": d.replaced.sum() / totals["real"],
            "loss": loss.detach(),
        }
        return loss, metrics


def roc_auc(scores: torch.Tensor, labels: torch.Tensor) -> float:
    """The area under the ROC curve of `scores` ranking the positive `labels` over the negative ones:
    the probability that a random positive scores above a random negative, a tie counting one half.
    By the rank formula (Mann–Whitney U): (sum of the positives' ranks − P(P+1)/2) / (P·N), tied scores
    sharing the mean of their ranks. NaN when either class is absent (the ranking is then undefined).

    >>> roc_auc(torch.tensor([0.1, 0.4, 0.35, 0.8]), torch.tensor([0, 0, 1, 1]))
    0.75
    >>> roc_auc(torch.tensor([0.5, 0.5, 0.2, 0.9]), torch.tensor([1, 0, 0, 1]))  # a tie counts 1/2
    0.875
    """
    scores, labels = scores.flatten().double(), labels.flatten().bool()
    positives = int(labels.sum())
    negatives = labels.numel() - positives
    if not positives or not negatives:
        return float("nan")
    _, group, counts = torch.unique(scores, return_inverse=True, return_counts=True)  # groups in ascending order
    last = counts.cumsum(0).double()  # 1-based rank of each group's last member
    mean_rank = last - (counts - 1) / 2  # a tie group holds the ranks last−count+1 … last
    rank_sum = float(mean_rank[group][labels].sum())
    return (rank_sum - positives * (positives + 1) / 2) / (positives * negatives)


def precision_recall(predicted: torch.Tensor, labels: torch.Tensor) -> tuple[float, float]:
    """Precision and recall of boolean `predicted` against boolean `labels`, each 0 where its
    denominator is (as tf.metrics.accuracy weighted by the predictions or the labels gives,
    google-research/electra's disc_precision and disc_recall).

    >>> precision_recall(torch.tensor([1, 1, 0, 0, 1]).bool(), torch.tensor([1, 0, 1, 0, 1]).bool())
    (0.6666666666666666, 0.6666666666666666)
    >>> precision_recall(torch.zeros(3, dtype=torch.bool), torch.tensor([1, 0, 0]).bool())
    (0.0, 0.0)
    """
    hits = int((predicted & labels).sum())
    said, there = int(predicted.sum()), int(labels.sum())
    return (hits / said if said else 0.0), (hits / there if there else 0.0)


@torch.no_grad()
def evaluate_replaced_token_detection(
    model, batches: Iterable[dict[str, torch.Tensor]], temperature: float = 1.0
) -> dict[str, float]:
    """Held-out metrics as google-research/electra's metric_fn (run_pretraining.py) names them:

    - masked_lm_accuracy, masked_lm_loss: the generator's argmax and cross-entropy at the masked positions;
    - sampled_masked_lm_accuracy: the share of masked positions where the sample is the original token;
    - disc_loss: the discriminator's BCE, a mean over real tokens (metric_fn means per-sequence means);
    - disc_accuracy; disc_precision, disc_recall of "replaced" (logit > 0), over real tokens;
    - disc_auc: how well the logits rank replaced over original tokens, exact over the real tokens
      (metric_fn's tf.metrics.auc bins the probabilities at 200 thresholds and counts padding as
      originals scored 0), the number that shows learning while the accuracy still sits at the
      "nothing replaced" answer;

    and replaced_share. generator_mlm_accuracy and discriminator_accuracy repeat masked_lm_accuracy
    and disc_accuracy under the names the training metrics (and the CLI's and demo's lines) use.
    """
    masked = real = 0
    sums = dict.fromkeys(("mlm_loss", "mlm_hits", "sample_hits", "bce", "disc_hits"), 0.0)
    scores, labels = [], []
    device = model_device(model)
    for batch in batches:
        d = detect_replacements(model, to_device(batch, device), temperature)
        logits, replaced = d.disc_logits[d.real].float(), d.replaced[d.real]  # (R,) each
        masked += len(d.targets)
        real += len(logits)
        sums["mlm_loss"] += float(d.gen_loss) * len(d.targets) if len(d.targets) else 0.0
        sums["mlm_hits"] += int((d.gen_logits.argmax(-1) == d.targets).sum())
        sums["sample_hits"] += int((d.sampled == d.targets).sum())
        sums["bce"] += float(F.binary_cross_entropy_with_logits(logits, replaced.float(), reduction="sum"))
        sums["disc_hits"] += int(((logits > 0) == replaced).sum())
        scores.append(logits.cpu())
        labels.append(replaced.cpu())
    if not real:
        raise ValueError("evaluation data has no tokens")
    if not masked:
        raise ValueError("evaluation data has no masked tokens")
    scores, labels = torch.cat(scores), torch.cat(labels)
    precision, recall = precision_recall(scores > 0, labels)
    out = {
        "masked_lm_accuracy": sums["mlm_hits"] / masked,
        "masked_lm_loss": sums["mlm_loss"] / masked,
        "sampled_masked_lm_accuracy": sums["sample_hits"] / masked,
        "disc_loss": sums["bce"] / real,
        "disc_accuracy": sums["disc_hits"] / real,
        "disc_precision": precision,
        "disc_recall": recall,
        "disc_auc": roc_auc(scores, labels),
        "replaced_share": float(labels.sum()) / real,
    }
    out["generator_mlm_accuracy"], out["discriminator_accuracy"] = out["masked_lm_accuracy"], out["disc_accuracy"]
    return out


# ---- distillation ---------------------------------------------------------------------------------


def backbone_inputs(model, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The batch's tensors a backbone takes: token types only where the family has them."""
    keys = ("input_ids", "attention_mask") + (("token_type_ids",) if model.config.type_vocab_size > 1 else ())
    return {k: batch[k] for k in keys if k in batch}


@dataclass(frozen=True)
class Alphas:
    ce: float = 5.0
    mlm: float = 2.0
    cos: float = 1.0
    mse: float = 0.0


class DistillationObjective:
    """The Trainer's objective for a student: see the module docstring. The teacher runs once per
    micro-batch, in inference mode, in bf16 where `teacher_bf16`."""

    def __init__(
        self,
        teacher: PreTrainedModel,
        alphas: Alphas = Alphas(),
        temperature: float = 2.0,
        ce_over: str = "masked",
        teacher_bf16: bool = False,
    ):
        if ce_over not in ("masked", "all"):
            raise ValueError(f"ce_over {ce_over!r}: choose masked or all")
        if temperature <= 0:
            raise ValueError(f"--temperature {temperature}: must be > 0")
        self.teacher, self.alphas, self.T, self.ce_over, self.teacher_bf16 = (
            teacher.eval(),
            alphas,
            temperature,
            ce_over,
            teacher_bf16,
        )
        self.teacher_backbone, self.teacher_mlm = parts(teacher)
        if self.teacher_mlm is None and (alphas.ce or alphas.mse):
            raise ValueError(
                f"the teacher ({teacher.architecture}) has no MLM head, so there are no logits to match: "
                "set --alpha-ce 0 and --alpha-mse 0 (the hidden-state term still teaches)"
            )

    def totals(self, batch: dict[str, torch.Tensor]) -> dict[str, int]:
        masked = int((batch["labels"] != IGNORE).sum())  # on the CPU
        real = int(batch["attention_mask"].sum())
        return {
            "masked": max(1, masked),
            "real": max(1, real),
            "rows": max(1, masked if self.ce_over == "masked" else real),
        }

    def __call__(self, student, batch: dict[str, torch.Tensor], totals: dict[str, int]):
        a = self.alphas
        labels, real = batch["labels"], batch["attention_mask"].bool()  # (B, T)
        masked = labels != IGNORE
        rows = masked if self.ce_over == "masked" else real  # where the soft targets are matched
        # on CUDA an fp32 teacher (teacher_bf16 False) leaves the student's autocast for its own
        with torch.no_grad(), torch.autocast(labels.device.type, dtype=torch.bfloat16, enabled=self.teacher_bf16):
            h_t = self.teacher_backbone(**backbone_inputs(self.teacher_backbone, batch)).last_hidden_state.float()
            z_t = self.teacher_mlm(h_t[rows])[0].float() if self.teacher_mlm is not None else None  # (R, V)
        backbone, mlm = parts(student)
        h_s = backbone(**backbone_inputs(backbone, batch)).last_hidden_state  # (B, T, H)
        z_s = mlm(h_s[rows])[0].float()  # (R, V)
        terms: dict[str, torch.Tensor] = {}
        if a.ce:
            kl = F.kl_div(F.log_softmax(z_s / self.T, -1), F.softmax(z_t / self.T, -1), reduction="sum")
            terms["ce"] = kl * self.T**2 / totals["rows"]
        if a.mlm:
            z_masked = z_s if self.ce_over == "masked" else mlm(h_s[masked])[0].float()  # (M, V)
            terms["mlm"] = F.cross_entropy(z_masked, labels[masked], reduction="sum") / totals["masked"]
        if a.cos:
            cos = F.cosine_similarity(h_s[real].float(), h_t[real], dim=-1)  # (R,)
            terms["cos"] = (1 - cos).sum() / totals["real"]
        if a.mse:
            terms["mse"] = F.mse_loss(z_s, z_t, reduction="sum") / totals["rows"]
        loss = sum(getattr(a, name) * term for name, term in terms.items())
        metrics = {f"{name}_loss": term.detach() for name, term in terms.items()}
        metrics["loss"] = loss.detach()
        return loss, metrics


@torch.no_grad()
def evaluate_student(student, teacher, batches) -> dict[str, float]:
    """Held-out MLM accuracy of the student and, when the teacher predicts tokens, the KL from the
    teacher's predictions to the student's at the masked positions and their top-1 agreement."""
    student.eval()
    t_backbone, t_mlm = parts(teacher)
    s_backbone, s_mlm = parts(student)
    correct = agree = masked_total = 0
    kl = 0.0
    device = model_device(student)
    for batch in batches:
        batch = to_device(batch, device)
        masked = batch["labels"] != IGNORE
        z_s = s_mlm(s_backbone(**backbone_inputs(s_backbone, batch)).last_hidden_state[masked])[0].float()
        correct += int((z_s.argmax(-1) == batch["labels"][masked]).sum())
        masked_total += int(masked.sum())
        if t_mlm is not None:
            z_t = t_mlm(t_backbone(**backbone_inputs(t_backbone, batch)).last_hidden_state[masked])[0].float()
            kl += float(F.kl_div(F.log_softmax(z_s, -1), F.softmax(z_t, -1), reduction="sum"))
            agree += int((z_s.argmax(-1) == z_t.argmax(-1)).sum())
    out = {"mlm_accuracy": correct / max(1, masked_total)}
    if t_mlm is not None:
        out.update(kl_to_teacher=kl / max(1, masked_total), teacher_agreement=agree / max(1, masked_total))
    return out


# ---- sentence-level distillation --------------------------------------------------------------------

TEACHER_KEYS = ("teacher_input_ids", "teacher_attention_mask", "teacher_token_type_ids")


class SentenceDistillationObjective:
    """The teacher's sentence embedding t (mean-pooled last hidden state over real tokens, L2-normalised:
    all-MiniLM-L6-v2's) is the target of the student's projected one p = W·mean(h_s) + b:

        loss = α_mse·‖p − t‖² + α_cos·(1 − cos(p, t)) [+ α_mlm·CE of the student's own MLM]

    each a mean over the global batch's sequences (the MLM term over its masked tokens). The squared
    distance is summed over the teacher's width rather than averaged, so that for a unit p it equals
    2·(1 − cos) and the two terms are on one scale.

    The tokenizers differ, so a batch carries two encodings of the same texts: the student's
    (input_ids, attention_mask, token_type_ids; masked_input_ids and labels with the MLM term) and the
    teacher's (teacher_input_ids, …), or the teacher's embeddings themselves (teacher_embedding, (B, H_t)).
    The teacher runs once per micro-batch without gradients, in bf16 where `teacher_bf16`.
    """

    def __init__(self, teacher, alphas: Alphas, teacher_bf16: bool = False):
        if alphas.ce:
            raise ValueError(
                "sentence-level distillation matches embeddings, not token predictions: --alpha-ce must be 0"
            )
        if not any((alphas.mse, alphas.cos, alphas.mlm)):
            raise ValueError("every --alpha-* is 0: nothing to learn from")
        self.teacher, self.alphas, self.teacher_bf16 = teacher.eval(), alphas, teacher_bf16
        self.teacher_backbone = parts(teacher)[0]

    @torch.no_grad()
    def teacher_embedding(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """(B, H_t) unit vectors: the batch's own teacher_embedding, else the teacher run on its encoding."""
        if "teacher_embedding" in batch:
            return batch["teacher_embedding"].float()
        batch = to_device(batch, model_device(self.teacher))  # a held-out batch comes from the CPU
        inputs = {k[len("teacher_") :]: batch[k] for k in TEACHER_KEYS if k in batch}
        with torch.autocast(inputs["input_ids"].device.type, dtype=torch.bfloat16, enabled=self.teacher_bf16):
            h = self.teacher_backbone(**backbone_inputs(self.teacher_backbone, inputs)).last_hidden_state
        return F.normalize(mean_pool(h.float(), inputs["attention_mask"]), dim=-1)

    def totals(self, batch: dict[str, torch.Tensor]) -> dict[str, int]:
        masked = int((batch["labels"] != IGNORE).sum()) if "labels" in batch else 0
        return {"sequences": batch["input_ids"].shape[0], "masked": max(1, masked)}

    def __call__(self, model, batch: dict[str, torch.Tensor], totals: dict[str, int]):
        a = self.alphas
        t = self.teacher_embedding(batch)  # (B, H_t)
        p = model.embed(batch).float()  # (B, H_t)
        terms: dict[str, torch.Tensor] = {}
        if a.mse:
            terms["mse"] = (p - t).pow(2).sum() / totals["sequences"]
        if a.cos:
            terms["cos"] = (1 - F.cosine_similarity(p, t, dim=-1)).sum() / totals["sequences"]
        if a.mlm:
            if "labels" not in batch:
                raise ValueError("--alpha-mlm > 0 needs masked_input_ids and labels in the batch")
            masked = batch["labels"] != IGNORE
            backbone, mlm = model.backbone, model.mlm
            inputs = {**batch, "input_ids": batch["masked_input_ids"]}
            h = backbone(**backbone_inputs(backbone, inputs)).last_hidden_state  # (B, T, H)
            z = mlm(h[masked])[0].float()  # (M, V)
            terms["mlm"] = F.cross_entropy(z, batch["labels"][masked], reduction="sum") / totals["masked"]
        loss = sum(getattr(a, name) * term for name, term in terms.items())
        metrics = {f"{name}_loss": term.detach() for name, term in terms.items()}
        metrics["cosine"] = F.cosine_similarity(p.detach(), t, dim=-1).sum() / totals["sequences"]
        metrics["loss"] = loss.detach()
        return loss, metrics


@torch.no_grad()
def evaluate_sentence_student(model, batches, teacher_embeddings: list[torch.Tensor]) -> dict[str, float]:
    """Held-out mean cosine between the student's projected embeddings and the teacher's (given, one
    (B, H_t) tensor per batch), and the mean squared distance between them."""
    model.eval()
    cos = dist = 0.0
    n = 0
    device = model_device(model)
    for batch, t in zip(batches, teacher_embeddings):
        batch, t = to_device(batch, device), t.to(device)
        p = model.embed(batch).float()  # (B, H_t)
        cos += float(F.cosine_similarity(p, t, dim=-1).sum())
        dist += float((p - t).pow(2).sum())
        n += len(t)
    return {"cosine": cos / max(1, n), "squared_distance": dist / max(1, n)}
