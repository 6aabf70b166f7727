"""A tiny attention-only transformer that learns in-context copying: the book's last chapter.

* :mod:`attnlib.transformer.model` – configuration, weights, the forward pass and its trace
* :mod:`attnlib.transformer.backward` – the exact gradient of the cross-entropy
* :mod:`attnlib.transformer.task` – the copying task: letters whose segment is repeated
* :mod:`attnlib.transformer.train` – Adam training, previous-token and induction scores, ablations
* :mod:`attnlib.transformer.generate` – greedy generation with a key–value cache per head
* :mod:`attnlib.transformer.export` – the weights as compact JSON for a forward pass in the page
"""

from attnlib.transformer.backward import cross_entropy, loss_and_grads
from attnlib.transformer.export import EXPORT_FORMAT, export_weights, import_weights
from attnlib.transformer.generate import Generation, generate
from attnlib.transformer.model import (
    TENSOR_NAMES,
    ForwardTrace,
    TransformerConfig,
    TransformerParams,
    forward,
    init_params,
)
from attnlib.transformer.task import LETTERS, CopyingBatch, copying_batch, decode_letters, encode_letters
from attnlib.transformer.train import (
    COPYING_HALF_LENGTHS,
    Checkpoint,
    CopyingRun,
    HeadScores,
    ablation_losses,
    copying_accuracy,
    copying_config,
    head_scores,
    train_copying,
)

__all__ = [
    "TransformerConfig", "TransformerParams", "TENSOR_NAMES", "init_params", "ForwardTrace", "forward",
    "cross_entropy", "loss_and_grads",
    "LETTERS", "CopyingBatch", "copying_batch", "encode_letters", "decode_letters",
    "COPYING_HALF_LENGTHS", "copying_config", "HeadScores", "head_scores", "copying_accuracy", "Checkpoint",
    "CopyingRun", "train_copying", "ablation_losses",
    "Generation", "generate",
    "EXPORT_FORMAT", "export_weights", "import_weights",
]
