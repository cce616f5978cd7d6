"""One Trainer for every training job: pretraining, fine-tuning, distillation.

A job supplies three things:
  - a model (a bertology PreTrainedModel);
  - `batches(step) -> dict`: the *global* batch of a step, a pure function of the step, so that a
    resumed run and a data-parallel run see exactly the batches an uninterrupted single process sees;
  - an objective (train/registry.py lists them): `totals(global_batch)` and `objective(model,
    micro_batch, totals) -> (loss, metrics)`, where the loss of a micro-batch is already divided by the
    *global* count (masked tokens, sequences), so that summing gradients over micro-batches and ranks
    gives the gradient of the global batch whatever the split; `save(dir)` and `load(dir, device)`
    where it carries state from step to step (XLNet's memory), which checkpoints then hold.

The Trainer does AdamW with BERT's decoupled weight decay (not on biases and LayerNorm), linear
warmup then linear decay, gradient accumulation, clipping, bf16 autocast, periodic evaluation,
JSON-lines metrics, a progress bar, atomic checkpoints (last K kept), exact resume, SIGINT /
SIGTERM → checkpoint and clean exit, and data parallelism over torch.distributed.

It runs on the CPU or a CUDA GPU (`device`; device.py): batches are built on the CPU (a step ahead
on CUDA) and copied; on CUDA the precision is measured and said (bf16 or fp16 autocast, the latter
with a gradient scaler, or fp32 with TF32 matrix products), and the step's metrics stay on the GPU
until a log step reads them, so no micro-step waits for the device.
"""

from __future__ import annotations

import math
import shutil
import signal
import threading
import time
from pathlib import Path
from typing import Any, Callable

import torch
from torch import nn

from ..io import atomic_dir
from ..progress import progress_bar
from . import distributed as dist
from .arguments import TrainingArguments
from .budget import CommandBudget, Reserve, TrainingTime
from .optimizer import parameter_groups  # (tasks import it from here too)
from .device import BatchFeed, choose_precision, say, to_device
from .report import Reporter
from .run import checkpoints
from .schedules import budget_schedule, schedule
from .state import load_weights, read_trainer_state, trainer_state

Batch = dict[str, torch.Tensor]


class Trainer:
    def __init__(
        self,
        model: nn.Module,
        args: TrainingArguments,
        batches: Callable[[int], Batch],
        objective,
        evaluate: Callable[[nn.Module], dict[str, float]] | None = None,
        save_extra: Callable[[Path], None] | None = None,
        clock: Callable[[], float] = time.perf_counter,
        param_groups: list[dict[str, Any]] | None = None,
        stop_when: Callable[[], bool] | None = None,
        budget: CommandBudget | None = None,
    ):
        self.model, self.args, self.batches, self.objective = model, args, batches, objective
        self.stop_when = stop_when  # asked after each evaluation: True ends the run there (early stopping)
        self.clock = clock  # the time budget's clock (a test passes one it controls)
        self.elapsed_s = 0.0  # wall time trained so far, over resumes: what a time budget is measured against
        # the whole command's budget (on `clock`; budget.py): training gets what setup left, less the end's reserve
        self.reserve = Reserve(args.checkpoints, args.loss_plot, evaluate is not None and bool(args.eval_every))
        self.time = TrainingTime(args.time_budget_s, budget, self.reserve)
        self.device = dist.rank_device(args.device, say)
        self.cuda = self.device.type == "cuda"
        self.precision = choose_precision(self.device, args.precision, args.bf16)
        if self.precision.reason:
            say(f"precision {self.precision.reason}")
        # fp16's gradient scaler (a no-op object elsewhere keeps one code path); its scale is checkpointed
        self.scaler = torch.amp.GradScaler(self.device.type, enabled=self.precision.scaled)
        model.to(self.device)
        if args.compile:
            model.compile_blocks(inference=False)
        self.evaluate_fn, self.save_extra = evaluate, save_extra
        self.out = Path(args.out_dir)
        # fused: one kernel over all parameters (the default per-tensor loop costs more than the
        # model's own step for small models with large embedding tables), on the CPU and on CUDA
        # param_groups: the job's own (a group's "lr" is its peak rate); default BERT's decay rule at args.lr
        groups = param_groups if param_groups is not None else parameter_groups(model, args.weight_decay)
        self.optimizer = torch.optim.AdamW(groups, lr=args.lr, betas=args.betas, eps=args.eps, fused=True)
        if args.time_budget_s is None:
            factor = schedule(args.schedule, args.steps, args.warmup_steps)
        else:  # LambdaLR asks for the rate after each step: it is read off the clock, not the step count
            by_share = budget_schedule(args.schedule, args.budget_warmup)
            factor = lambda step: by_share(self.time.share(self.elapsed_s))  # noqa: E731
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, factor)
        self.step = 0
        self.resumed_from: int | None = None  # the checkpoint's step, once `resume` has read it (for summaries)
        self.forward_backward_s = 0.0
        self._timed: list[tuple[torch.cuda.Event, torch.cuda.Event]] = []  # CUDA: forward/backward not yet read
        self._last_loss: tuple[int, torch.Tensor] | None = None  # CUDA: (step, loss) not yet checked finite
        self.history: list[dict[str, Any]] = []  # every metrics line written, for callers and tests
        self.tokens = 0  # real (unpadded) tokens trained on, over resumes: the x of loss.png
        self.reporter = Reporter(self.out, args.report_to, dist.is_main())
        self._stop_signal: int | None = None
        dist.broadcast_parameters(model)  # every rank starts from rank 0's weights

    # ---- checkpoints ----------------------------------------------------------------------------
    @property
    def checkpoint_dir(self) -> Path:
        return self.out / "checkpoints"

    def checkpoints(self) -> list[Path]:
        return checkpoints(self.out)

    def save_checkpoint(self) -> Path | None:
        """Write checkpoints/step-N atomically: everything into a temporary directory, then one rename."""
        gather = getattr(self.objective, "gather_for_checkpoint", None)  # state spread over ranks (XLNet's memory)
        if gather is not None:
            gather()
        self._check_finite()  # never a checkpoint of weights a diverged step has spoilt
        if not dist.is_main():
            dist.barrier()
            return None
        final = self.checkpoint_dir / f"step-{self.step:08d}"
        started = self.clock()
        with atomic_dir(final, exists="replace") as tmp:  # a killed run leaves the previous checkpoint as it was
            self.model.save(tmp)
            self.reserve.measured["model"] = self.clock() - started  # what the job's final write of the model costs
            if self.save_extra is not None:
                self.save_extra(tmp)
            if hasattr(self.objective, "save"):  # state an objective carries across steps (XLNet's memory)
                self.objective.save(tmp)
            torch.save(trainer_state(self), tmp / "trainer_state.pt")
        for old in self.checkpoints()[: -self.args.keep_checkpoints]:
            shutil.rmtree(old, ignore_errors=True)
        self.reserve.measured["checkpoint"] = self.clock() - started
        dist.barrier()
        return final

    def resume(self, checkpoint: Path | None = None) -> int:
        """Continue from the newest checkpoint (or `checkpoint`): weights, optimizer, schedule, rngs, data position."""
        checkpoint = checkpoint or (self.checkpoints()[-1] if self.checkpoints() else None)
        if checkpoint is None:
            raise FileNotFoundError(f"{self.checkpoint_dir}: no checkpoint to resume from")
        state = read_trainer_state(checkpoint, self.model, self.device)
        load_weights(self.model, checkpoint)
        if hasattr(self.objective, "load"):
            self.objective.load(checkpoint, self.device)
        self.elapsed_s = float(state.get("elapsed_s", 0.0))
        self.time.resumed(state)  # the schedule the run's first command planned goes on
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        torch.set_rng_state(state["torch_rng"].cpu())  # train() forks the global state: the caller's is untouched
        if self.cuda and "cuda_rng" in state:  # a checkpoint written on the CPU resumes on the GPU from a fresh stream
            torch.cuda.set_rng_state(state["cuda_rng"].cpu(), self.device)
        if self.scaler.is_enabled() and "grad_scaler" in state:
            self.scaler.load_state_dict(state["grad_scaler"])
        self.step = self.resumed_from = int(state["step"])
        self.tokens = int(state.get("tokens", 0))
        self.reporter.truncate(self.step)
        return self.step

    # ---- metrics ------------------------------------------------------------------------------
    @property
    def metrics_file(self) -> Path:
        return self.reporter.metrics_file

    def log(self, record: dict[str, Any]) -> None:
        self.history.append(record)
        self.reporter.log(record)

    # ---- the loop -----------------------------------------------------------------------------
    def shard(self, global_batch: Batch) -> Batch:
        """This rank's rows of the global batch (all of them in one process)."""
        return {k: v[dist.rank() :: dist.world_size()] for k, v in global_batch.items()}

    def train_step(self, global_batch: Batch, shard: Batch | None = None) -> dict[str, torch.Tensor | float]:
        """One optimizer step on `global_batch` (on the CPU; `shard`: this rank's rows of it, pinned,
        when built ahead). Metrics come back as 0-d tensors on the device, read at log steps."""
        args = self.args
        totals = self.objective.totals(global_batch)  # counted on the CPU: no wait for the device
        shard = to_device(self.shard(global_batch) if shard is None else shard, self.device)
        micro = shard[next(iter(shard))].shape[0] // args.accumulation
        metrics: dict[str, torch.Tensor | float] = {}
        self.model.train()
        started = time.perf_counter()
        if self.cuda:  # the GPU's own clock: the host returns from a kernel launch long before the kernel ends
            self._timed.append((torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)))
            self._timed[-1][0].record()
        for i in range(args.accumulation):
            part = {k: v[i * micro : (i + 1) * micro] for k, v in shard.items()}
            with self.precision.autocast():
                loss, m = self.objective(self.model, part, totals)
            self.scaler.scale(loss).backward()
            for k, v in m.items():  # summed in float64, as Python floats were: the same numbers on the CPU
                v = v.detach().double() if isinstance(v, torch.Tensor) else v
                metrics[k] = metrics[k] + v if k in metrics else v
        if self.cuda:
            self._timed[-1][1].record()
        else:
            self.forward_backward_s += time.perf_counter() - started
        dist.all_reduce_gradients(self.model)
        metrics = dist.all_reduce_sums(metrics, self.device)
        if "loss" in metrics:
            self._last_loss = (self.step + 1, metrics["loss"])
            if not self.cuda:  # free on the CPU; on the GPU read at log steps and checkpoints (a NaN stays NaN)
                self._check_finite()
        self.scaler.unscale_(self.optimizer)  # fp16: clip the true gradients, not the scaled ones
        if args.max_grad_norm is not None:
            metrics["grad_norm"] = torch.nn.utils.clip_grad_norm_(self.model.parameters(), args.max_grad_norm)
        metrics["lr"] = self.scheduler.get_last_lr()[0]
        self.scaler.step(self.optimizer)  # fp16: skipped where the scaled gradients overflowed
        self.scaler.update()
        self._tick()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        return metrics

    def _check_finite(self) -> None:
        """Raise if the last step's loss is not finite (a host sync on the GPU: at log steps and checkpoints)."""
        if self._last_loss is not None:
            step, loss = self._last_loss
            self._last_loss = None
            finite_or_raise(float(loss), f"loss at step {step}")

    def _forward_backward_s(self) -> float:
        """Seconds of forward and backward so far (CUDA: the timed steps' events, read now, once)."""
        if self._timed:
            self._timed[-1][1].synchronize()
            self.forward_backward_s += sum(a.elapsed_time(b) for a, b in self._timed) / 1000
            self._timed.clear()
        return self.forward_backward_s

    def _tick(self) -> None:
        """Bring elapsed_s up to now (the time budget's clock; the schedule reads it)."""
        now = self.clock()
        self.elapsed_s += now - self._last_tick
        self._last_tick = now

    @property
    def out_of_time(self) -> bool:
        if self.time.horizon_s is None:
            return False
        return dist.any_rank(self.time.out_of_time(self.elapsed_s, self._last_tick), self.device)

    def _on_signal(self, signum, frame) -> None:
        self._stop_signal = signum  # finish the current step, then checkpoint and stop

    def train(self, resume: bool = False) -> dict[str, Any]:
        """Train to args.steps (or continue the newest checkpoint with `resume`). Dropout draws from
        a fork of torch's global random state, so the caller's state is as it was afterwards."""
        with torch.random.fork_rng(devices=[self.device.index] if self.cuda else []), self.precision.matmuls():
            return self._train(resume)

    def _train(self, resume: bool) -> dict[str, Any]:
        args = self.args
        if dist.is_main() and self.checkpoint_dir.is_dir():  # what a killed checkpoint write left behind
            for stale in self.checkpoint_dir.glob(".*-step-*"):
                shutil.rmtree(stale, ignore_errors=True)
        if resume:
            self.resume()
        elif args.overwrite and dist.is_main():
            shutil.rmtree(self.checkpoint_dir, ignore_errors=True)
            self.reporter.start_afresh()
        elif self.checkpoints() or (dist.is_main() and self.metrics_file.is_file()):
            raise FileExistsError(
                f"{self.out}: holds an earlier run (metrics.jsonl, checkpoints/); continue it "
                "with resume (--resume) or write to a new directory"
            )
        if self.time.budget is not None and self.step < args.steps:
            self.time.plan(self.elapsed_s, self.out)
        in_main_thread = threading.current_thread() is threading.main_thread()  # signals can only be caught there
        previous = (
            {s: signal.signal(s, self._on_signal) for s in (signal.SIGINT, signal.SIGTERM)} if in_main_thread else {}
        )
        bar = _progress(args, self.step, self.elapsed_s, self.time.horizon_s)
        started, tokens = time.perf_counter(), 0  # this session's, for its rate; self.tokens: the run's
        self._last_tick = self.clock()
        first_step = self.step + 1  # this command's: after it, the reserve's checkpoint and plot are measured
        self.forward_backward_s = 0.0  # of the wall time since `started`: the rest is data, optimizer, logging
        self._timed.clear()
        ahead = args.prefetch if args.prefetch is not None else self.cuda
        feed = BatchFeed(self.batches, self.shard, pin=self.cuda, ahead=ahead, last_step=args.steps)
        try:
            if self.time.budget is not None and self.reserve.evaluates:  # timed for the reserve; a fresh run's step 0
                self._evaluate(log=self.step == 0)
                self._tick()
            while self.step < args.steps and not self.out_of_time:
                before = self._last_tick
                global_batch, shard = feed(self.step)
                metrics = self.train_step(global_batch, shard)
                self.reserve.add_step(self._last_tick - before)  # tick to tick: a step and the loop's work around it
                self.step += 1
                seen = int(global_batch["attention_mask"].sum()) if "attention_mask" in global_batch else 0
                tokens, self.tokens = tokens + seen, self.tokens + seen
                last = self.step == args.steps or self.out_of_time
                measure = self.time.budget is not None and self.step == first_step and not last
                logged = self.step % args.log_every == 0 or last or (measure and args.loss_plot)
                if bar is not None:
                    bar.update(1 if args.time_budget_s is None else min(self.time.horizon_s, self.elapsed_s) - bar.n)
                if logged or not self.cuda:  # on the GPU, which is still at work, metrics are read at log steps
                    self._check_finite()
                    metrics = {k: float(v) for k, v in metrics.items()}  # the host sync of a log step
                    elapsed = time.perf_counter() - started
                    metrics["tokens_per_s"] = tokens / elapsed if elapsed > 0 else 0.0
                    metrics["outside_forward_backward"] = (
                        1 - self._forward_backward_s() / elapsed if elapsed > 0 else 0.0
                    )
                    if args.time_budget_s is not None:
                        metrics["elapsed_s"] = self.elapsed_s
                    if bar is not None:
                        bar.set_postfix(
                            loss=f"{metrics.get('loss', float('nan')):.3f}", tok_s=f"{metrics['tokens_per_s']:.0f}"
                        )
                if logged:
                    self.log({"step": self.step, "tokens": self.tokens, **metrics})
                if measure:  # what the end will cost: a checkpoint (the model's write timed inside it), the plot
                    self._measure_end()
                    last = self.out_of_time  # what it measured may leave no time for another step
                if args.eval_every and self.evaluate_fn and (self.step % args.eval_every == 0 or last):
                    self._evaluate()
                    self._tick()  # evaluation spends the budget too
                    if self.stop_when is not None and self.stop_when():
                        break
                stop_here = args.stop_at is not None and self.step == args.stop_at < args.steps
                if self._stop_signal is not None or stop_here:
                    if args.checkpoints:
                        self.save_checkpoint()
                    return {"step": self.step, "interrupted": True}
                if args.checkpoints and args.save_every and self.step % args.save_every == 0 and self.step < args.steps:
                    self.save_checkpoint()
            if self.out_of_time:
                self.time.stopped(self.elapsed_s)
            if args.checkpoints:
                self.save_checkpoint()
            return {"step": self.step, "interrupted": False}
        finally:
            feed.close()
            if bar is not None:
                bar.close()
            self.reporter.close(plot=args.loss_plot)
            for s, handler in previous.items():
                signal.signal(s, handler)

    def _measure_end(self) -> None:
        """Time a checkpoint (and in it the model's write) and the loss plot: the reserve's other parts."""
        if self.args.checkpoints:
            self.save_checkpoint()
        if self.args.loss_plot and dist.is_main():
            started = self.clock()
            self.reporter.plot()
            self.reserve.measured["plot"] = self.clock() - started
        self._tick()

    def _evaluate(self, log: bool = True) -> None:
        """An evaluation, timed for the reserve (the final one costs as much), and its line in the metrics."""
        started = self.clock()
        scores = {f"eval/{k}": v for k, v in self.run_evaluation().items()}
        self.reserve.measured["evaluation"] = self.clock() - started
        if log:
            self.log({"step": self.step, "tokens": self.tokens, **scores})

    @torch.no_grad()
    def run_evaluation(self) -> dict[str, float]:
        """The job's evaluation of the model, on its device, in the run's precision."""
        self.model.eval()
        with self.precision.autocast():
            return self.evaluate_fn(self.model)


def _progress(args: TrainingArguments, start: int, elapsed_s: float, horizon_s: float | None):
    if args.quiet or not dist.is_main():
        return None
    if horizon_s is not None:  # a budgeted run's length is its time, not its steps
        return progress_bar(
            total=horizon_s,
            initial=min(elapsed_s, horizon_s),
            desc="train",
            unit="s",
            dynamic_ncols=True,
            bar_format="{l_bar}{bar}| {n:.0f}/{total:.0f} s [{postfix}]",
        )
    return progress_bar(total=args.steps, initial=start, desc="train", unit="step", dynamic_ncols=True)


def finite_or_raise(value: float, what: str) -> float:
    if not math.isfinite(value):
        raise FloatingPointError(f"{what} is {value}: training diverged (lower the learning rate or enable clipping)")
    return value
