"""Distillation objectives: DistilBERT's triple loss for a student of the teacher's own kind, and
sentence-embedding distillation for a student with a tokenizer of its own.

DistillationObjective: α_ce·T²·KL of the softened predictions + α_mlm·CE + α_cos·(1 − cos) of the last
hidden states, optionally + α_mse·MSE of the logits; a teacher without an MLM head teaches through the
hidden states alone. SentenceDistillationObjective (Reimers & Gurevych, 2020): the student matches the
teacher's sentence embedding through a linear projection. Losses are divided by global-batch counts, as
every objective's are (train/mlm.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ..models.base import PreTrainedModel
from ..models.heads import IGNORE_INDEX, mean_pool
from .device import model_device, to_device
from .student import parts


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
        masked = int((batch["labels"] != IGNORE_INDEX).sum())  # on the CPU
        real = int(batch["attention_mask"].sum())
        return {
            "masked": max(1, masked),
            "real": max(1, real),
            "rows": max(1, masked if self.ce_over == "masked" else real),
        }

    def __call__(self, student, batch: dict[str, torch.Tensor], totals: dict[str, int]):
        a = self.alphas
        labels, real = batch["labels"], batch["attention_mask"].bool()  # (B, T)
        masked = labels != IGNORE_INDEX
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
        masked = batch["labels"] != IGNORE_INDEX
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
        masked = int((batch["labels"] != IGNORE_INDEX).sum()) if "labels" in batch else 0
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
            masked = batch["labels"] != IGNORE_INDEX
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
