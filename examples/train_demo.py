"""An instrumented training job: what ``make demo`` runs.

A small multi-layer perceptron learns to tell the three arms of a spiral apart.
The job is laid out like a real trainer, and every phase is traced with a base
span group::

    train.job                      job
      train.model_init             model_init
      train.load_checkpoint        load_checkpoint (finds none on a fresh run)
      train.step          x N      step
        train.forward_backward     forward_backward
        train.optimizer            optimizer
      train.evaluate   every K     evaluate
      train.checkpoint every C     checkpoint

With torch installed the model is a torch MLP trained on the CPU (a CPU build
installs with ``pip install torch==2.13.0``); without it, a pure-Python MLP of
the same shape and loop stands in, so the demo never needs a large download.

Telemetry is configured the way a real job does it, with
``NemoLensConfig.from_env()``, except that the demo turns itself on: where a
variable is unset, it uses

    NEMO_LENS_ENABLED=1               telemetry on
    NEMO_LENS_EXPORTER=file           traces/{service}-{run id}-rank0.jsonl, no collector
    NEMO_LENS_SPAN_GROUPS=per_step    all eight base groups
    NEMO_LENS_METRICS_ENABLED=0       the demo records no metrics
    OTEL_SERVICE_NAME=nemo-demo

and any variable you set wins (``NEMO_LENS_SPAN_GROUPS=default make demo``
records only the job, evaluation and checkpoint spans). At the end it prints
where the trace went, ``nemo-lens summarize`` of it, its goodput, and writes
the HTML report (``nemo-lens report``) next to it.

A crash and resume, for goodput's restart and wasted progress::

    python examples/train_demo.py --checkpoint-dir ckpt --fail-at 200   # fails at 200
    python examples/train_demo.py --checkpoint-dir ckpt                 # resumes at 150

With ``--checkpoint-dir`` the run id is kept in the directory (``run_id``), as a
requeued SLURM job keeps its ``SLURM_JOB_ID``: the resumed process writes to the
same trace, and the report and goodput see both lifetimes as one run.

Run ``python examples/train_demo.py --help`` for the options.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import io
import itertools
import json
import math
import os
import random
import sys
import tempfile
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final, Protocol

from nemo.lens import NemoLensConfig, TelemetryHandle, managed_span, setup_telemetry, trace_fn
from nemo.lens.groups import SpanGroup

CLASSES: Final = 3
"""Spiral arms, and so output classes."""
TRAIN_POINTS_PER_CLASS: Final = 300
EVAL_POINTS_PER_CLASS: Final = 100

DEMO_DEFAULTS: Final = (
    # (variable, NemoLensConfig field, value used while the variable is unset)
    ("NEMO_LENS_ENABLED", "enabled", True),
    ("NEMO_LENS_EXPORTER", "exporter", "file"),
    ("NEMO_LENS_SPAN_GROUPS", "span_groups", "per_step"),
    ("NEMO_LENS_METRICS_ENABLED", "metrics_enabled", False),
    ("OTEL_SERVICE_NAME", "service_name", "nemo-demo"),
)


# --- options ---------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Options:
    """What the command line asked for."""

    iterations: int
    batch_size: int | None
    eval_every: int
    checkpoint_every: int
    checkpoint_dir: Path | None
    backend: str
    seed: int
    summary: bool
    fail_at: int | None = None


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not positive; use 1 or more")
    return value


def parse_options(argv: Sequence[str] | None) -> Options:
    """Parse ``argv`` (default ``sys.argv[1:]``); bad usage exits with status 2."""
    parser = argparse.ArgumentParser(
        prog="train_demo.py",
        description=(
            "Train a small MLP on a synthetic spiral with nemo.lens telemetry on, then print "
            "where the trace went and a per-group summary of it. NEMO_LENS_* variables "
            "change what is recorded (see the module docstring)."
        ),
    )
    parser.add_argument(
        "--iterations", type=_positive, default=300, help="training steps (default: 300)"
    )
    parser.add_argument(
        "--batch-size",
        type=_positive,
        default=None,
        help="samples per step (default: 128 with torch, 32 in pure Python)",
    )
    parser.add_argument(
        "--eval-every", type=_positive, default=100, help="evaluate every N steps (default: 100)"
    )
    parser.add_argument(
        "--checkpoint-every",
        type=_positive,
        default=150,
        help="save a checkpoint every N steps and at the end (default: 150)",
    )
    parser.add_argument(
        "--checkpoint-dir",
        type=Path,
        default=None,
        help="keep checkpoints here and resume from the one found there (default: a "
        "temporary directory, so every run starts fresh)",
    )
    parser.add_argument(
        "--backend",
        choices=("auto", "torch", "python"),
        default="auto",
        help="torch, pure Python, or torch when it is installed (default: auto)",
    )
    parser.add_argument("--seed", type=int, default=0, help="data and weight seed (default: 0)")
    parser.add_argument(
        "--fail-at",
        type=_positive,
        default=None,
        metavar="N",
        help="crash during iteration N (needs --checkpoint-dir); run again without it to "
        "resume from the last checkpoint",
    )
    parser.add_argument(
        "--no-summary",
        dest="summary",
        action="store_false",
        help="do not print the per-group summary at the end",
    )
    args = parser.parse_args(argv)
    if args.backend == "torch" and not _torch_available():
        parser.error(
            "--backend torch: torch is not installed; install a CPU build with "
            "pip install torch==2.13.0, or use --backend python"
        )
    if args.fail_at is not None and args.checkpoint_dir is None:
        parser.error("--fail-at needs --checkpoint-dir DIR: the run that follows resumes from it")
    backend = args.backend
    if backend == "auto":
        backend = "torch" if _torch_available() else "python"
    return Options(
        iterations=args.iterations,
        batch_size=args.batch_size,
        eval_every=args.eval_every,
        checkpoint_every=args.checkpoint_every,
        checkpoint_dir=args.checkpoint_dir,
        backend=backend,
        seed=args.seed,
        summary=args.summary,
        fail_at=args.fail_at,
    )


def _torch_available() -> bool:
    # A CPU build of torch without numpy warns about numpy on import; the demo
    # never hands torch a numpy array, so the warning would only be noise.
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy", category=UserWarning)
    try:
        importlib.import_module("torch")
    except ImportError:
        return False
    return True


# --- data ------------------------------------------------------------------------------------


def spiral(points_per_class: int, seed: int) -> tuple[list[tuple[float, float]], list[int]]:
    """Return points of a three-arm spiral and the arm each one lies on.

    Each arm winds a quarter turn further than its radius grows, with a little
    angular noise, so no straight line separates the arms: a linear model tops
    out near chance and the hidden layers have something to learn.
    """
    rng = random.Random(seed)
    points: list[tuple[float, float]] = []
    labels: list[int] = []
    for arm in range(CLASSES):
        for i in range(points_per_class):
            radius = (i + 1) / points_per_class
            angle = arm * 2 * math.pi / CLASSES + radius * 4.0 + rng.gauss(0.0, 0.2)
            points.append((radius * math.sin(angle), radius * math.cos(angle)))
            labels.append(arm)
    return points, labels


# --- the two trainers ------------------------------------------------------------------------


class Trainer(Protocol):
    """One model with its optimizer and data: what the training loop drives."""

    description: str
    checkpoint_name: str
    parameters: int

    def forward_backward(self, iteration: int) -> float:
        """Compute the loss of this iteration's batch and its gradients; return the loss."""
        ...

    def optimizer_step(self) -> None:
        """Apply the gradients and clear them."""
        ...

    def evaluate(self) -> tuple[float, float]:
        """Return the loss and accuracy on the held-out points."""
        ...

    def save(self, path: Path, iteration: int) -> None:
        """Write model, optimizer state and ``iteration`` to ``path``."""
        ...

    def load(self, path: Path) -> int:
        """Restore from ``path``; return the iteration it was saved at."""
        ...


def _write_atomically(path: Path, data: bytes) -> None:
    # A job killed while saving must not leave a torn checkpoint to resume from.
    partial = path.with_name(path.name + ".partial")
    partial.write_bytes(data)
    os.replace(partial, path)


Layer = tuple[list[list[float]], list[float]]
"""A dense layer in pure Python: weights[out][in] and biases[out]."""


def _zeros_like(layers: Sequence[Layer]) -> list[Layer]:
    return [([[0.0] * len(row) for row in weights], [0.0] * len(b)) for weights, b in layers]


class PythonTrainer:
    """A tanh MLP (2 -> 16 -> 16 -> 3) with softmax cross-entropy and SGD with momentum.

    Plain lists and loops: slow, but dependency-free and the same loop as the
    torch trainer, so the trace has the same shape.
    """

    checkpoint_name = "checkpoint.json"
    _HIDDEN: Final = 16
    _LEARNING_RATE: Final = 0.1
    _MOMENTUM: Final = 0.9

    def __init__(self, seed: int, batch_size: int) -> None:
        sizes = [2, self._HIDDEN, self._HIDDEN, CLASSES]
        rng = random.Random(seed)
        # layer = (weights[out][in], biases[out]); Xavier-style scale keeps tanh unsaturated.
        self.layers: list[Layer] = [
            (
                [
                    [rng.gauss(0.0, 1.0 / math.sqrt(n_in)) for _ in range(n_in)]
                    for _ in range(n_out)
                ],
                [0.0] * n_out,
            )
            for n_in, n_out in itertools.pairwise(sizes)
        ]
        self.velocity = _zeros_like(self.layers)
        self.grads = _zeros_like(self.layers)
        self.points, self.labels = spiral(TRAIN_POINTS_PER_CLASS, seed)
        self.eval_points, self.eval_labels = spiral(EVAL_POINTS_PER_CLASS, seed + 1)
        self.batch_size = batch_size
        self.batch_rng = random.Random(seed + 2)
        self.parameters = sum(len(w) * len(w[0]) + len(b) for w, b in self.layers)
        self.description = (
            f"a pure-Python MLP (2-{self._HIDDEN}-{self._HIDDEN}-{CLASSES}, "
            f"{self.parameters} parameters; install torch for a torch model)"
        )

    def _forward(self, x: Sequence[float]) -> list[list[float]]:
        activations = [list(x)]
        for index, (weights, biases) in enumerate(self.layers):
            inputs = activations[-1]
            z = [
                sum(w * a for w, a in zip(row, inputs, strict=True)) + b
                for row, b in zip(weights, biases, strict=True)
            ]
            last = index == len(self.layers) - 1
            activations.append(z if last else [math.tanh(v) for v in z])
        return activations

    @staticmethod
    def _softmax(logits: Sequence[float]) -> list[float]:
        top = max(logits)
        exps = [math.exp(v - top) for v in logits]
        total = sum(exps)
        return [e / total for e in exps]

    def forward_backward(self, iteration: int) -> float:
        """Loss of a random batch, with its gradients added to ``self.grads`` (batch mean)."""
        loss = 0.0
        scale = 1.0 / self.batch_size
        for _ in range(self.batch_size):
            sample = self.batch_rng.randrange(len(self.points))
            activations = self._forward(self.points[sample])
            probabilities = self._softmax(activations[-1])
            label = self.labels[sample]
            loss -= math.log(max(probabilities[label], 1e-12))
            delta = [p - (1.0 if k == label else 0.0) for k, p in enumerate(probabilities)]
            for index in range(len(self.layers) - 1, -1, -1):
                weights, _ = self.layers[index]
                weights_grad, bias_grad = self.grads[index]
                inputs = activations[index]
                for out, d in enumerate(delta):
                    row = weights_grad[out]
                    for i, a in enumerate(inputs):
                        row[i] += d * a * scale
                    bias_grad[out] += d * scale
                if index:
                    # Through the weights, then through the previous layer's tanh.
                    delta = [
                        (1.0 - inputs[i] ** 2)
                        * sum(weights[out][i] * d for out, d in enumerate(delta))
                        for i in range(len(inputs))
                    ]
        return loss * scale

    def optimizer_step(self) -> None:
        """SGD with momentum, then clear the gradients (as torch's ``zero_grad``)."""
        for (weights, biases), (w_grad, b_grad), (w_vel, b_vel) in zip(
            self.layers, self.grads, self.velocity, strict=True
        ):
            for row, grad_row, vel_row in zip(weights, w_grad, w_vel, strict=True):
                for i, g in enumerate(grad_row):
                    vel_row[i] = self._MOMENTUM * vel_row[i] - self._LEARNING_RATE * g
                    row[i] += vel_row[i]
            for i, g in enumerate(b_grad):
                b_vel[i] = self._MOMENTUM * b_vel[i] - self._LEARNING_RATE * g
                biases[i] += b_vel[i]
        self.grads = _zeros_like(self.layers)

    def evaluate(self) -> tuple[float, float]:
        """Mean loss and accuracy over the held-out spiral."""
        loss = 0.0
        correct = 0
        for point, label in zip(self.eval_points, self.eval_labels, strict=True):
            probabilities = self._softmax(self._forward(point)[-1])
            loss -= math.log(max(probabilities[label], 1e-12))
            correct += probabilities.index(max(probabilities)) == label
        return loss / len(self.eval_points), correct / len(self.eval_points)

    def save(self, path: Path, iteration: int) -> None:
        """JSON: the iteration, the layers and the momentum buffers."""
        state = {"iteration": iteration, "layers": self.layers, "velocity": self.velocity}
        _write_atomically(path, json.dumps(state).encode("utf-8"))

    def load(self, path: Path) -> int:
        """Restore what :meth:`save` wrote."""
        state = json.loads(path.read_text("utf-8"))
        self.layers = [(weights, biases) for weights, biases in state["layers"]]
        self.velocity = [(weights, biases) for weights, biases in state["velocity"]]
        iteration: int = state["iteration"]
        return iteration


class TorchTrainer:
    """A tanh MLP (2 -> 128 -> 128 -> 3) in torch, trained on the CPU with SGD and momentum."""

    checkpoint_name = "checkpoint.pt"
    _HIDDEN: Final = 128
    _LEARNING_RATE: Final = 0.1
    _MOMENTUM: Final = 0.9

    def __init__(self, seed: int, batch_size: int) -> None:
        import torch  # optional: imported only when this trainer is chosen

        self.torch = torch
        torch.manual_seed(seed)
        self.model = torch.nn.Sequential(
            torch.nn.Linear(2, self._HIDDEN),
            torch.nn.Tanh(),
            torch.nn.Linear(self._HIDDEN, self._HIDDEN),
            torch.nn.Tanh(),
            torch.nn.Linear(self._HIDDEN, CLASSES),
        )
        self.optimizer = torch.optim.SGD(
            self.model.parameters(), lr=self._LEARNING_RATE, momentum=self._MOMENTUM
        )
        points, labels = spiral(TRAIN_POINTS_PER_CLASS, seed)
        self.points = torch.tensor(points)
        self.labels = torch.tensor(labels)
        eval_points, eval_labels = spiral(EVAL_POINTS_PER_CLASS, seed + 1)
        self.eval_points = torch.tensor(eval_points)
        self.eval_labels = torch.tensor(eval_labels)
        self.batch_size = batch_size
        self.generator = torch.Generator().manual_seed(seed + 2)
        self.parameters = sum(p.numel() for p in self.model.parameters())
        self.description = (
            f"a torch {torch.__version__} MLP (2-{self._HIDDEN}-{self._HIDDEN}-{CLASSES}, "
            f"{self.parameters} parameters) on the CPU"
        )

    def forward_backward(self, iteration: int) -> float:
        """Loss and gradients of a random batch."""
        batch = self.torch.randint(len(self.points), (self.batch_size,), generator=self.generator)
        logits = self.model(self.points[batch])
        loss = self.torch.nn.functional.cross_entropy(logits, self.labels[batch])
        # torch.autograd.backward is loss.backward() with type annotations (mypy --strict).
        self.torch.autograd.backward(loss)
        return float(loss.item())

    def optimizer_step(self) -> None:
        """One SGD step, then clear the gradients."""
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)

    def evaluate(self) -> tuple[float, float]:
        """Mean loss and accuracy over the held-out spiral."""
        with self.torch.no_grad():
            logits = self.model(self.eval_points)
            loss = self.torch.nn.functional.cross_entropy(logits, self.eval_labels)
            accuracy = (logits.argmax(dim=1) == self.eval_labels).float().mean()
        return float(loss.item()), float(accuracy.item())

    def save(self, path: Path, iteration: int) -> None:
        """``torch.save`` of the iteration and both state dicts."""
        partial = path.with_name(path.name + ".partial")
        state = {
            "iteration": iteration,
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
        }
        self.torch.save(state, partial)
        os.replace(partial, path)

    def load(self, path: Path) -> int:
        """Restore what :meth:`save` wrote."""
        state = self.torch.load(path, weights_only=True)
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        iteration: int = state["iteration"]
        return iteration


def build_trainer(options: Options) -> Trainer:
    """The trainer ``options.backend`` names, with its default batch size unless given."""
    if options.backend == "torch":
        return TorchTrainer(options.seed, options.batch_size or 128)
    return PythonTrainer(options.seed, options.batch_size or 32)


# --- output ----------------------------------------------------------------------------------


class Console:
    """Lines on stdout and, on a terminal, a tqdm progress bar on stderr.

    Lines go through ``tqdm.write`` while the bar is drawn, so they scroll
    above it instead of tearing it. No bar when stderr is not a terminal, when
    tqdm is not installed, or when spans are printed to the same terminal (the
    console exporter).
    """

    def __init__(self, total: int, enabled: bool) -> None:
        self._bar: Any = None
        if enabled and sys.stderr.isatty():
            try:
                tqdm = importlib.import_module("tqdm").tqdm
            except ImportError:
                return
            self._bar = tqdm(total=total, desc="training", unit="step", file=sys.stderr)

    def say(self, text: str) -> None:
        """Print one line."""
        if self._bar is None:
            print(text, flush=True)
        else:
            self._bar.write(text, file=sys.stdout)

    def advance(self, iteration: int, loss: float) -> None:
        """Move the bar to ``iteration`` and show the loss."""
        if self._bar is not None:
            self._bar.set_postfix_str(f"loss {loss:.4f}", refresh=False)
            self._bar.update(iteration - self._bar.n)

    def close(self) -> None:
        """Remove the bar (idempotent)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None


# --- the job ---------------------------------------------------------------------------------


class SimulatedFailure(RuntimeError):
    """The crash ``--fail-at`` asks for."""


@trace_fn(SpanGroup.OPTIMIZER, "train.optimizer")
def optimizer_step(trainer: Trainer) -> None:
    """Traced with the decorator, where the other phases use ``managed_span``."""
    trainer.optimizer_step()


def load_checkpoint(trainer: Trainer, path: Path, console: Console) -> int:
    """Resume from ``path`` when it exists; return the iterations already done."""
    with managed_span(SpanGroup.LOAD_CHECKPOINT, "train.load_checkpoint") as span:
        found = path.is_file()
        done = trainer.load(path) if found else 0
        if span is not None:
            span.set_attribute("checkpoint.found", found)
            span.set_attribute("checkpoint.iteration", done)
    if found:
        console.say(f"resuming from {path} at iteration {done}")
    else:
        console.say("no checkpoint to resume from: starting from scratch")
    return done


def train(options: Options, checkpoint_dir: Path, console: Console) -> float | None:
    """Run the job; return the last evaluation accuracy (``None`` if nothing was left to do)."""
    accuracy: float | None = None
    with managed_span(
        SpanGroup.JOB,
        "train.job",
        backend=options.backend,
        iterations=options.iterations,
        seed=options.seed,
    ):
        with managed_span(SpanGroup.MODEL_INIT, "train.model_init") as span:
            trainer = build_trainer(options)
            if span is not None:
                span.set_attribute("model.parameters", trainer.parameters)
        console.say(f"model: {trainer.description}")
        checkpoint = checkpoint_dir / trainer.checkpoint_name
        start = load_checkpoint(trainer, checkpoint, console)
        if start >= options.iterations:
            console.say(f"the checkpoint is at iteration {start}: nothing left to train")
        width = len(str(options.iterations))
        for iteration in range(start + 1, options.iterations + 1):
            with managed_span(SpanGroup.STEP, "train.step", iteration=iteration) as span:
                with managed_span(SpanGroup.FORWARD_BACKWARD, "train.forward_backward"):
                    loss = trainer.forward_backward(iteration)
                    if iteration == options.fail_at:
                        raise SimulatedFailure(f"simulated failure at iteration {iteration}")
                optimizer_step(trainer)
                if span is not None:
                    span.set_attribute("loss", loss)
            console.advance(iteration, loss)
            last = iteration == options.iterations
            where = f"iteration {iteration:>{width}}/{options.iterations}"
            if iteration % options.eval_every == 0 or last:
                with managed_span(SpanGroup.EVALUATE, "train.evaluate", iteration=iteration) as ev:
                    eval_loss, accuracy = trainer.evaluate()
                    if ev is not None:
                        ev.set_attribute("eval.loss", eval_loss)
                        ev.set_attribute("eval.accuracy", accuracy)
                console.say(
                    f"{where}: loss {loss:.4f}, eval loss {eval_loss:.4f}, "
                    f"eval accuracy {accuracy:.1%}"
                )
            if iteration % options.checkpoint_every == 0 or last:
                with managed_span(SpanGroup.CHECKPOINT, "train.checkpoint", iteration=iteration):
                    trainer.save(checkpoint, iteration)
                console.say(f"{where}: checkpoint saved")
    return accuracy


# --- telemetry -------------------------------------------------------------------------------


def telemetry_config(checkpoint_dir: Path | None = None) -> NemoLensConfig:
    """``NemoLensConfig.from_env()`` with the demo's defaults where a variable is unset.

    With a ``checkpoint_dir``, the run id is the one kept there (made on the first run),
    unless ``NEMO_LENS_RUN_ID`` or the scheduler names one. Raises ``ValueError`` naming
    the variable when one holds a bad value.
    """
    config = NemoLensConfig.from_env()
    defaults: dict[str, Any] = {
        field: value
        for variable, field, value in DEMO_DEFAULTS
        if not os.environ.get(variable, "").strip()
    }
    config = dataclasses.replace(config, **defaults)
    if checkpoint_dir is not None and not config.run_id.strip():
        config = dataclasses.replace(config, run_id=kept_run_id(checkpoint_dir))
    return config


def kept_run_id(checkpoint_dir: Path) -> str:
    """The run id kept in ``checkpoint_dir``: a resumed job stays the same run."""
    from nemo.lens.config import default_run_id

    path = checkpoint_dir / "run_id"
    if path.is_file():
        kept = path.read_text("utf-8").strip()
        if kept:
            return kept
    run_id = default_run_id()
    checkpoint_dir.mkdir(parents=True, exist_ok=True)
    _write_atomically(path, (run_id + "\n").encode("utf-8"))
    return run_id


def cli_command() -> str:
    """How to run ``nemo-lens`` from here: the console script beside this Python, if any."""
    here = Path(sys.executable)
    script = here.with_name("nemo-lens")
    if script.exists():
        return _short(script)
    return f"{_short(here)} -m nemo.lens.cli"


def _short(path: Path) -> str:
    relative = os.path.relpath(path)
    return str(path) if relative.startswith("..") else relative


def report(handle: TelemetryHandle, console: Console, options: Options) -> int:
    """Say where the trace went and summarize it; return the exit status."""
    from nemo.lens import cli

    config = handle.config
    exporter = config.exporter.strip().lower()
    if not handle.enabled:
        setting = os.environ.get("NEMO_LENS_ENABLED", "")
        console.say(f"telemetry was off (NEMO_LENS_ENABLED={setting}): nothing was recorded")
        return 0
    if not handle.enabled_groups:
        console.say(f"no span group was enabled (NEMO_LENS_SPAN_GROUPS={config.span_groups!r})")
        return 0
    if exporter == "none":
        console.say("trace: created but not exported (NEMO_LENS_EXPORTER=none)")
        return 0
    if not handle.is_exporting:
        console.say(
            f"this rank does not export (NEMO_LENS_EXPORT_STRATEGY={config.export_strategy})"
        )
        return 0
    if exporter == "console":
        console.say("trace: printed above, one JSON span per line (the console exporter)")
        console.say(
            f"  to summarize it, capture the output and run: {cli_command()} summarize "
            "--skip-invalid OUTPUT"
        )
        return 0
    if exporter != "file":
        console.say(f"trace: sent with the {exporter} exporter")
        return 0
    path = config.format_trace_file(handle.rank)
    console.say(f"trace: {path}")
    if options.summary:
        console.say("")
        sys.stdout.flush()
        status = cli.main(["summarize", path])
        if status:
            return status
    console.say("")
    sys.stdout.flush()
    status = cli.main(["report", path])  # the goodput line, and the HTML page
    if status:
        return status
    explain_start_up(console, path, options)
    command = cli_command()
    stem = path[: -len(".jsonl")] if path.endswith(".jsonl") else path
    console.say("")
    console.say(f"to look at it in Perfetto: {command} convert --to perfetto {path}")
    console.say(f"  then open {stem}.pftrace at https://ui.perfetto.dev")
    return 0


START_UP_SHARE: Final = 0.1
START_UP_MIN_S: Final = 0.5
"""Above this share of the run, and at least this long, the demo explains its initialization
in one line (a pure-Python run's few milliseconds, stretched on a loaded machine, need none)."""


def explain_start_up(console: Console, path: str, options: Options) -> None:
    """Say in one line what a short run's start-up costs and what it would cost a longer one.

    300 steps take a fraction of a second; a real job's model set-up is paid once before
    hours of steps. The projection keeps this run's start-up and its pace per step
    (evaluations and checkpoints included), from the trace's own goodput figures.
    """
    from nemo.lens import cli

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        if cli.main(["goodput", "--json", path]):
            return
    run = json.loads(out.getvalue().splitlines()[0])
    wall, productive = run["wall_s"], run["productive_s"]
    start_up = run["badput"]["initialization"]
    if productive <= 0 or start_up <= START_UP_SHARE * wall or start_up < START_UP_MIN_S:
        return
    steps = 100 * options.iterations
    per_step = (wall - start_up) / options.iterations
    projected = steps * productive / options.iterations / (start_up + steps * per_step)
    cause = (
        " (most of it torch's first optimizer loading its modules)"
        if (options.backend == "torch")
        else ""
    )
    console.say(
        f"start-up: initialization is {start_up:.1f} s of this {wall:.1f} s run{cause}, paid "
        f"once; at this pace {steps:,} steps would be {projected:.1%} goodput"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the demo; return the exit status (2 for bad options or NEMO_LENS_* values)."""
    options = parse_options(argv)
    try:
        config = telemetry_config(options.checkpoint_dir)
        handle = setup_telemetry(config)
    except (ValueError, TypeError) as exc:
        print(f"train_demo.py: error: {exc}", file=sys.stderr)
        return 2
    groups = [g for g in SpanGroup.GROUP_INFO if g in handle.enabled_groups]
    console = Console(options.iterations, enabled=config.exporter.strip().lower() != "console")
    console.say(f"nemo.lens demo: {options.iterations} iterations on a 3-arm spiral")
    if handle.enabled:
        console.say(f"telemetry: {config.exporter} exporter, span groups {config.span_groups!r}:")
        console.say(f"  {', '.join(groups) or '(none)'}")
    else:
        console.say("telemetry: off")
    started = time.perf_counter()
    accuracy: float | None = None
    interrupted = False
    failure: SimulatedFailure | None = None
    try:
        with tempfile.TemporaryDirectory(prefix="nemo-lens-demo-") as scratch:
            checkpoint_dir = options.checkpoint_dir or Path(scratch)
            checkpoint_dir.mkdir(parents=True, exist_ok=True)
            accuracy = train(options, checkpoint_dir, console)
    except KeyboardInterrupt:
        interrupted = True  # the spans still open end as the stack unwinds; keep them
    except SimulatedFailure as exc:
        failure = exc  # the same: its spans end, with the error recorded
    finally:
        console.close()
        handle.shutdown()  # flushes the trace file before it is read back
    if interrupted:
        print("interrupted; the spans recorded so far were exported", file=sys.stderr)
        return 130
    if failure is not None:
        print(
            f"train_demo.py: {failure} (--fail-at); the spans recorded so far were exported.\n"
            f"  run again without --fail-at to resume from the checkpoint in "
            f"{options.checkpoint_dir}",
            file=sys.stderr,
        )
        return 1
    elapsed = time.perf_counter() - started
    outcome = "" if accuracy is None else f"; eval accuracy {accuracy:.1%}"
    console.say(f"done in {elapsed:.1f} s{outcome}")
    return report(handle, console, options)


if __name__ == "__main__":
    sys.exit(main())
