"""A small training experiment: does an attention layer learn, with and without the scale?

One attention layer with learned ``W_Q`` and ``W_K`` must retrieve, for each query, the value of the
key the query matches among ``n_keys − 1`` distractors. The loss is a mean squared error on the
attention *output*, as in a real network, so every gradient passes through the softmax Jacobian
(built on the backward lines of :func:`attnlib.grad.attention_backward`, checked against finite
differences and autograd). Every name below is importable from ``attnlib.training``.

* :mod:`attnlib.training.task` – the task's batches (:func:`~attnlib.training.task.retrieval_batch`)
  and the Xavier-uniform weights a layer starts from
* :mod:`attnlib.training.layer` – the loss and its gradients
  (:func:`~attnlib.training.layer.retrieval_loss_and_grads`) and one layer trained by plain SGD or
  Adam under one of :data:`~attnlib.core.SCALE_RULES` (:func:`~attnlib.training.layer.train_retrieval`)
* :mod:`attnlib.training.sweep` – the sweep over ``d_k``, scale rules, learning rates and seeds
  (:func:`~attnlib.training.sweep.learning_rate_sweep`): each seed's best rate chosen on a validation
  batch and reported on a separate test batch, the comparison with a rerun from weights moved by a few
  ulps (where training is chaotic), and the accuracies of the form the task is built for
  (``W_Q W_Kᵀ = c · I``) and of the nearest key, which no such form can compute
"""

from attnlib.training.layer import OPTIMIZERS, TrainingRun, retrieval_loss_and_grads, train_retrieval
from attnlib.training.sweep import (
    BestRates,
    SweepResult,
    identity_form_accuracy,
    learning_rate_sweep,
    median_rate,
    nearest_key_accuracy,
)
from attnlib.training.task import RetrievalBatch, retrieval_batch, xavier_uniform

__all__ = [
    "xavier_uniform",
    "RetrievalBatch",
    "retrieval_batch",
    "OPTIMIZERS",
    "retrieval_loss_and_grads",
    "TrainingRun",
    "train_retrieval",
    "median_rate",
    "identity_form_accuracy",
    "nearest_key_accuracy",
    "BestRates",
    "SweepResult",
    "learning_rate_sweep",
]
