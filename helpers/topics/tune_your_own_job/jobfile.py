"""The job-file contract of notebook 16 and ``python -m helpers.tune``: load a user's job file and
call its functions so that a mistake is one ``JobError`` naming the function and what was wrong,
never a traceback from deep inside Keras. The contract itself is documented in
``jobs/template.py``; the trial program (notebook 16's lesson code) uses what is here.

    job = jobfile.load("jobs/capstone_naive.py")
    model = jobfile.model(job, fused_batch_norm=True)
    dataset = jobfile.dataset(job, 64)
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from helpers import checks

DEFAULTS = {"LOSS": "sparse_categorical_crossentropy", "BATCH_SIZES": [64], "STEPS": 32}
MAX_STEPS = 100_000
MAX_BATCH = 65_536


class JobError(ValueError):
    """A job file that does not keep the contract; the message names the function or name."""


def _fail(where: str, exc: BaseException) -> JobError:
    text = " ".join(str(exc).split())
    return JobError(f"{where} raised {type(exc).__name__}: {text[:600]}")


def load(path: str | Path) -> ModuleType:
    """Import the job file at ``path`` as a fresh module and check its names (``JobError``)."""
    path = checks.path("job", path)
    if path.suffix != ".py" or not path.is_file():
        raise JobError(f"the job must be a Python file (.py) that exists, got {str(path)!r}")
    spec = importlib.util.spec_from_file_location(f"job_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))  # a job may import a module that sits beside it
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - any error while importing is the job file's
        raise _fail(f"importing {path.name}", exc) from None
    finally:
        sys.path.remove(str(path.parent))
    check(module)
    return module


def _choices(job: ModuleType, name: str, function: str) -> dict[str, list[Any]]:
    choices = getattr(job, name, {})
    if not isinstance(choices, dict) or not all(
        isinstance(k, str) and k.isidentifier() for k in choices
    ):
        raise JobError(
            f"{name} must be a dict of {{argument name: [its value, alternatives...]}}, "
            f"got {choices!r:.80}"
        )
    parameters = inspect.signature(getattr(job, function)).parameters
    for key, values in choices.items():
        if not isinstance(values, list) or len(values) < 2:
            raise JobError(
                f"{name}[{key!r}] must list the job's own value first and at least one alternative"
            )
        if key not in parameters:
            raise JobError(f"{name} names {key!r}, but {function}() takes no argument of that name")
        default = parameters[key].default
        if default is not inspect.Parameter.empty and default != values[0]:
            raise JobError(
                f"{name}[{key!r}] must start with {function}()'s default {default!r}, "
                f"got {values[0]!r}"
            )
    return choices


def check(job: ModuleType) -> ModuleType:
    """``job`` when it defines the contract's names with the right kinds; else ``JobError``."""
    for name in ("make_model", "make_dataset"):
        if not callable(getattr(job, name, None)):
            raise JobError(f"the job file must define {name}(); see jobs/template.py")
    if "make_optimizer" in vars(job) and not callable(job.make_optimizer):
        raise JobError("make_optimizer must be a function returning a new optimizer")
    sizes = getattr(job, "BATCH_SIZES", DEFAULTS["BATCH_SIZES"])
    if (
        not isinstance(sizes, list | tuple)
        or not sizes
        or len(set(sizes)) != len(sizes)
        or not all(
            isinstance(b, int) and not isinstance(b, bool) and 1 <= b <= MAX_BATCH for b in sizes
        )
    ):
        raise JobError(
            f"BATCH_SIZES must be a list of different whole numbers from 1 to {MAX_BATCH}, "
            f"got {sizes!r:.80}"
        )
    steps = getattr(job, "STEPS", DEFAULTS["STEPS"])
    if isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= MAX_STEPS:
        raise JobError(f"STEPS must be a whole number from 1 to {MAX_STEPS}, got {steps!r:.80}")
    _choices(job, "MODEL_CHOICES", "make_model")
    _choices(job, "DATASET_CHOICES", "make_dataset")
    return job


def settings_of(job: ModuleType) -> dict[str, Any]:
    """The job's own values of what the contract lets it set."""
    return {
        "batch_sizes": list(getattr(job, "BATCH_SIZES", DEFAULTS["BATCH_SIZES"])),
        "steps": getattr(job, "STEPS", DEFAULTS["STEPS"]),
        "model_choices": getattr(job, "MODEL_CHOICES", {}),
        "dataset_choices": getattr(job, "DATASET_CHOICES", {}),
    }


def model(job: ModuleType, **choices: Any) -> Any:
    """``job.make_model(**choices)``, checked to return an uncompiled-or-compiled Keras model."""
    import keras

    try:
        built = job.make_model(**choices)
    except Exception as exc:  # noqa: BLE001 - the learner's function failed: say which
        raise _fail("make_model()", exc) from None
    if not isinstance(built, keras.Model):
        raise JobError(f"make_model() must return a keras.Model, got {type(built).__name__}")
    return built


def optimizer_and_loss(job: ModuleType) -> tuple[Any, Any]:
    """The job's optimizer (``make_optimizer()``, or Adam) and ``LOSS``, each checked now: Keras'
    ``compile`` takes any loss name and fails only in ``fit``."""
    import keras

    try:
        optimizer = (
            job.make_optimizer()
            if callable(getattr(job, "make_optimizer", None))
            else keras.optimizers.Adam(1e-3)
        )
    except Exception as exc:  # noqa: BLE001
        raise _fail("make_optimizer()", exc) from None
    if not isinstance(optimizer, keras.optimizers.Optimizer):
        raise JobError(
            f"make_optimizer() must return a Keras optimizer, got {type(optimizer).__name__}"
        )
    loss = getattr(job, "LOSS", DEFAULTS["LOSS"])
    try:
        keras.losses.get(loss)
    except Exception as exc:  # noqa: BLE001
        raise _fail("LOSS", exc) from None
    return optimizer, loss


def compile_model(job: ModuleType, built: Any, **settings: Any) -> Any:
    """``built.compile`` with the job's optimizer and loss and the trial's ``settings``."""
    optimizer, loss = optimizer_and_loss(job)
    try:
        built.compile(optimizer=optimizer, loss=loss, **settings)
    except Exception as exc:  # noqa: BLE001
        raise _fail("model.compile() with the job's LOSS and optimizer", exc) from None
    return built


def dataset(job: ModuleType, batch_size: int, **choices: Any) -> Any:
    """``job.make_dataset(batch_size, **choices)``, checked to be a dataset of (inputs, targets)."""
    import tensorflow as tf

    checks.whole_number("batch_size", batch_size, 1, maximum=MAX_BATCH)
    try:
        made = job.make_dataset(batch_size, **choices)
    except Exception as exc:  # noqa: BLE001
        raise _fail(f"make_dataset({batch_size})", exc) from None
    if not isinstance(made, tf.data.Dataset):
        raise JobError(f"make_dataset() must return a tf.data.Dataset, got {type(made).__name__}")
    spec = made.element_spec
    if not isinstance(spec, tuple) or len(spec) not in (2, 3):
        raise JobError(
            "make_dataset() must yield (inputs, targets) pairs for model.fit, "
            f"got elements {spec!r:.120}"
        )
    return made


def fit(built: Any, data: Any, **kwargs: Any) -> Any:
    """``built.fit(data, **kwargs)``; a failing training step is a ``JobError`` saying so."""
    try:
        return built.fit(data, verbose=0, shuffle=False, **kwargs)  # a dataset shuffles itself
    except Exception as exc:  # noqa: BLE001 - a wrong shape, a dtype, a NaN check: all the job's
        raise _fail("training (model.fit on make_dataset's batches)", exc) from None


def check_make_dataset(fn: Any, features: Any, labels: Any) -> Any:
    """Notebook 16's exercise: does ``fn(batch_size)`` keep the contract for these arrays:
    a dataset of (inputs, targets) batches, ``batch_size`` each, holding every example once?"""
    import numpy as np

    from helpers.exercises import correct, not_yet

    if not callable(fn):
        return not_yet(f"make_dataset must be a function of batch_size, got {type(fn).__name__}")
    job = ModuleType("exercise")
    job.make_dataset = fn
    for batch_size in (32, 50):
        whole = -(-len(features) // batch_size)  # the batches of one pass over the examples
        try:  # one batch more than a pass, at most: a .repeat() would never end
            batches = list(dataset(job, batch_size).take(whole + 1))
        except JobError as exc:
            return not_yet(str(exc))
        except Exception as exc:  # noqa: BLE001 - reading the dataset failed
            return not_yet(f"reading make_dataset({batch_size}) raised {type(exc).__name__}: {exc}")
        if not batches:
            return not_yet(f"make_dataset({batch_size}) gave no batches")
        try:  # the element spec is a pair or a triple (jobfile.dataset checked it)
            weights = [np.asarray(b[2]) for b in batches] if len(batches[0]) == 3 else []
            zero = int(sum(np.sum(w <= 0) for w in weights))  # sample weights, as fit reads them
            single = np.ndim(batches[0][0]) < np.ndim(features)
            swapped = single and np.shape(batches[0][1])[1:] == np.shape(features)[1:]
        except Exception as exc:  # noqa: BLE001 - inputs of uneven shapes, text weights
            return not_yet(f"the batches are not (inputs, targets) arrays: {type(exc).__name__}")
        if zero:
            return not_yet(
                f"model.fit takes the third element as sample weights, and {zero} examples "
                "weigh 0 or less: return (inputs, targets) pairs"
            )
        if isinstance(batches[0][0], dict):
            return not_yet(
                "the inputs are a dict: this exercise's model takes the features as one array, "
                "the first element of each (inputs, targets) pair"
            )
        if swapped:
            return not_yet(
                "the pairs are (targets, inputs): return (inputs, targets), features first"
            )
        if single:
            return not_yet(
                "the elements are single examples (inputs of shape "
                f"{list(np.shape(batches[0][0]))}), not batches: end with .batch(batch_size)"
            )
        sizes = [int(np.shape(b[0])[0]) for b in batches]
        # The last batch may be smaller; a shuffle after .batch() moves it, which fit accepts too.
        if sum(n != batch_size for n in sizes) > 1 or max(sizes) > batch_size:
            return not_yet(
                f"make_dataset({batch_size}) gave batches of {sorted(set(sizes))} examples, "
                f"not {batch_size}"
            )
        if len(batches) > whole:
            return not_yet(
                f"make_dataset({batch_size}) gave more than the {whole} batches of one pass: "
                "hold each example once (no .repeat(): the trials repeat a finite dataset "
                "themselves, and this check reads one pass)"
            )
        try:
            inputs = np.concatenate([np.asarray(b[0]) for b in batches])
            targets = np.concatenate([np.asarray(b[1]) for b in batches])
            if targets.shape == (len(labels), 1):  # a column of labels: what fit takes, too
                targets = targets[:, 0]
            if inputs.shape != np.shape(features) or targets.shape != np.shape(labels):
                rows = targets.ndim == 2 and np.allclose(targets.sum(axis=1), 1)
                one_hot = rows and np.isin(targets, (0, 1)).all()
                return not_yet(
                    f"the batches hold inputs {inputs.shape} and targets {targets.shape}, "
                    f"not all of features {np.shape(features)} and labels {np.shape(labels)}"
                    + (
                        "; one-hot targets need another loss: keep the labels as they are"
                        if one_hot
                        else ""
                    )
                )
            order = np.lexsort(np.asarray(features).T)
            mine = np.lexsort(inputs.T)
            same = np.allclose(inputs[mine], np.asarray(features)[order]) and np.array_equal(
                targets[mine], np.asarray(labels)[order]
            )
        except Exception as exc:  # noqa: BLE001 - batches of another shape or kind
            return not_yet(
                f"the batches are not (inputs, targets) arrays: {type(exc).__name__}: {exc}"
            )
        if targets.dtype.kind not in "iuf":  # int32 or float labels train as well; bool does not
            return not_yet(f"the targets are {targets.dtype}: cast the labels to a number type")
        if not same:
            return not_yet(
                "the (inputs, targets) pairs do not match features and labels example by example"
            )
    return correct(
        "batches of (inputs, targets), batch_size each, every example once with its own label."
    )
