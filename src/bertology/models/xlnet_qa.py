"""XLNet's SQuAD head (Yang et al., 2019, after Dai et al.'s): the answer's end scored given its start,
a beam of starts × ends at inference, and whether the question has an answer at all (SQuAD 2.0).

Shapes: B batch, T length, H d_model, S start_n_top starts kept, E end_n_top ends kept per start.

    h ─► start logits (B, T) ─► training: the gold start's state ─► end logits (B, T)
                             └► inference: the S best starts' states ─► end logits (B, T, S), E best each
    [start state; h[<cls>]] ─► answer class (B,): is the question unanswerable

The fine-tuning tasks use the simpler span head (XLNetForQuestionAnsweringSimple, as BERT's); this
one is what transformers' XLNetForQuestionAnswering checkpoints hold, loaded and run the same.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from ..nn.relative_attention import NEG
from .config import XLNetConfig
from .heads import binary_loss, span_loss
from .outputs import ModelOutput
from .xlnet import XLNetTaskModel

Tensor = torch.Tensor


@dataclass
class XLNetQuestionAnsweringOutput(ModelOutput):
    """The beam over answer starts and ends. The "log_probs" are probabilities (transformers' names)."""

    loss: Tensor | None = None
    start_top_log_probs: Tensor | None = None  # (B, S)
    start_top_index: Tensor | None = None  # (B, S)
    end_top_log_probs: Tensor | None = None  # (B, S · E)
    end_top_index: Tensor | None = None  # (B, S · E)
    cls_logits: Tensor | None = None  # (B,) is the question unanswerable
    mems: tuple[Tensor, ...] | None = None
    hidden_states: tuple[Tensor, ...] | None = None
    attentions: tuple[Tensor, ...] | None = None


def hide(logits: Tensor, p_mask: Tensor | None) -> Tensor:
    """Positions with p_mask 1 (question, specials, padding) cannot be an answer's start or end."""
    return logits if p_mask is None else logits * (1 - p_mask) + NEG * p_mask


class StartLogits(nn.Module):
    def __init__(self, config: XLNetConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, 1)

    def forward(self, h: Tensor, p_mask: Tensor | None = None) -> Tensor:
        return hide(self.dense(h).squeeze(-1), p_mask)  # (B, T)


class EndLogits(nn.Module):
    """The end scored given the start's state: dense(tanh(dense([h_end; h_start]))) with a LayerNorm between."""

    def __init__(self, config: XLNetConfig):
        super().__init__()
        H = config.hidden_size
        self.dense_0 = nn.Linear(2 * H, H)
        self.LayerNorm = nn.LayerNorm(H, eps=config.layer_norm_eps)
        self.dense_1 = nn.Linear(H, 1)

    def forward(self, h: Tensor, start_states: Tensor, p_mask: Tensor | None = None) -> Tensor:
        x = self.LayerNorm(torch.tanh(self.dense_0(torch.cat([h, start_states], dim=-1))))
        return hide(self.dense_1(x).squeeze(-1), p_mask)


class AnswerClass(nn.Module):
    """Whether the question has no answer (SQuAD 2.0), from the start state and <cls>."""

    def __init__(self, config: XLNetConfig):
        super().__init__()
        H = config.hidden_size
        self.dense_0 = nn.Linear(2 * H, H)
        self.dense_1 = nn.Linear(H, 1, bias=False)

    def forward(self, h: Tensor, start_states: Tensor, cls_index: Tensor | None = None) -> Tensor:
        cls = h[:, -1] if cls_index is None else h.gather(1, cls_index[:, None, None].expand(-1, 1, h.shape[-1]))[:, 0]
        return self.dense_1(torch.tanh(self.dense_0(torch.cat([start_states, cls], dim=-1)))).squeeze(-1)  # (B,)


class XLNetForQuestionAnswering(XLNetTaskModel):
    """XLNet's SQuAD head: the end conditioned on the start. Training takes gold spans (teacher-forced
    start); inference returns a beam of start_n_top starts × end_n_top ends and a no-answer score."""

    output_class = XLNetQuestionAnsweringOutput

    def build_head(self, config):
        self.start_logits = StartLogits(config)
        self.end_logits = EndLogits(config)
        self.answer_class = AnswerClass(config)

    def forward(
        self,
        input_ids,
        attention_mask=None,
        token_type_ids=None,
        start_positions=None,
        end_positions=None,
        is_impossible=None,
        cls_index=None,
        p_mask=None,
        output_hidden_states=False,
        output_attentions=False,
        **inputs,
    ) -> XLNetQuestionAnsweringOutput:
        out = self.run_backbone(
            input_ids, attention_mask, token_type_ids, None, output_hidden_states, output_attentions, **inputs
        )
        h = out.last_hidden_state  # (B, T, H)
        start_logits = self.start_logits(h, p_mask)  # (B, T)
        if start_positions is not None and end_positions is not None:
            return self.output(
                out,
                loss=self.loss(
                    h, start_logits, start_positions.view(-1), end_positions.view(-1), is_impossible, cls_index, p_mask
                ),
            )
        return self.output(out, **self.beam(h, start_logits, p_mask, cls_index))

    def loss(self, h, start_logits, start_positions, end_positions, is_impossible, cls_index, p_mask) -> Tensor:
        """The span loss with the end scored from the gold start, plus half the answer-class loss when given."""
        B, T, H = h.shape
        start_states = h.gather(1, start_positions[:, None, None].expand(-1, 1, H)).expand(-1, T, -1)  # (B, T, H)
        loss = span_loss(start_logits, self.end_logits(h, start_states, p_mask), start_positions, end_positions)
        if cls_index is not None and is_impossible is not None:
            cls_logits = self.answer_class(h, start_states[:, 0], cls_index.view(-1))
            loss = loss + 0.5 * binary_loss(cls_logits, is_impossible.view(-1))
        return loss

    def beam(self, h, start_logits, p_mask, cls_index) -> dict[str, Tensor]:
        """The S most probable starts, the E most probable ends after each, and the no-answer score
        from the expected start (the start states weighted by their probabilities)."""
        (B, T, H), S, E = h.shape, self.config.start_n_top, self.config.end_n_top
        start_probs = F.softmax(start_logits, dim=-1)  # (B, T)
        top_start_probs, top_start = start_probs.topk(S, dim=-1)  # (B, S)
        start_states = h.gather(1, top_start[..., None].expand(-1, -1, H))  # (B, S, H)
        start_states = start_states[:, None].expand(-1, T, -1, -1)  # (B, T, S, H)
        end_logits = self.end_logits(
            h[:, :, None].expand_as(start_states), start_states, p_mask[..., None] if p_mask is not None else None
        )  # (B, T, S)
        top_end_probs, top_end = F.softmax(end_logits, dim=1).topk(E, dim=1)  # (B, E, S)
        expected_start = torch.einsum("blh,bl->bh", h, start_probs)  # (B, H)
        return dict(
            start_top_log_probs=top_start_probs,
            start_top_index=top_start,
            end_top_log_probs=top_end_probs.reshape(B, S * E),
            end_top_index=top_end.reshape(B, S * E),
            cls_logits=self.answer_class(h, expected_start, cls_index),
        )
