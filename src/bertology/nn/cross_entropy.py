"""Cross-entropy over a vocabulary-wide output, computed a block of rows at a time.

Shapes: R rows (masked tokens), V vocabulary.

`F.cross_entropy(logits.float(), labels)` on bf16 logits writes the (R, V) matrix four more times
in fp32 (the cast, log-softmax, a zero-filled gradient, log-softmax's backward) and once more in
bf16 (the gradient cast back): at the MLM head's R = 320, V = 30,522 that was a tenth of a
BERT-mini training step. Here each block of rows is read into fp32 while it is in cache: the
forward pass keeps only the log-normaliser per row, the backward pass writes the gradient
softmax − one-hot once, in the logits' dtype. Same loss and gradient (fp32 arithmetic throughout),
a third of the time.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.autograd.function import once_differentiable

IGNORE_INDEX = -100  # the label a loss skips: one name and value in the house (transformers' ignore_index)
_BLOCK = 1 << 21  # elements per block of rows: 8 MB in fp32


def cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of (R, V) logits against (R,) labels, rows labelled IGNORE_INDEX left out
    (NaN when every row is, as `F.cross_entropy`)."""
    if logits.device.type != "cpu" or torch.compiler.is_compiling():
        return F.cross_entropy(logits.float(), labels, ignore_index=IGNORE_INDEX)
    return _BlockwiseCrossEntropy.apply(logits, labels)


class _BlockwiseCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        lse = torch.empty(len(logits), dtype=torch.float32)  # log Σ_v exp(logit_v) per row
        for rows in blocks(logits):
            block = logits[rows]
            top = block.amax(-1, keepdim=True)  # (rows, 1): exp never overflows
            lse[rows] = shifted(block, top).exp_().sum(-1).log_().add_(top.squeeze(1))
        kept = labels != IGNORE_INDEX  # (R,)
        targets = labels.clamp(min=0)  # an ignored row points at token 0; its weight is 0
        target_logits = logits.gather(1, targets[:, None]).squeeze(1).float()  # (R,)
        count = kept.sum()
        ctx.save_for_backward(logits, targets, kept, lse, count)
        return ((lse - target_logits) * kept).sum() / count

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_loss: torch.Tensor):
        logits, targets, kept, lse, count = ctx.saved_tensors
        weight = kept * (grad_loss / count)  # (R,): d loss / d row
        grad = torch.empty_like(logits)
        for rows in blocks(logits):
            out = grad[rows]
            if out.dtype == torch.float32:  # log-probabilities, written where the gradient goes
                block = torch.sub(logits[rows], lse[rows, None], out=out)
            else:
                block = shifted(logits[rows], lse[rows, None])
            block.exp_()[torch.arange(len(block)), targets[rows]] -= 1  # softmax − one-hot
            block.mul_(weight[rows, None])
            if block is not out:
                out.copy_(block)
        return grad, None


def blocks(logits: torch.Tensor) -> list[slice]:
    """The (R, V) logits' rows in blocks of at most _BLOCK elements (at least one row each)."""
    R, V = logits.shape
    rows = max(1, _BLOCK // V)
    return [slice(r, r + rows) for r in range(0, R, rows)]


def shifted(block: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
    """block − shift as a new fp32 tensor (a bf16 block is widened first; an fp32 one is never written)."""
    if block.dtype == torch.float32:
        return block - shift
    return block.float().sub_(shift)
