"""Device names and the placement exercises' checks (notebooks 02-04).

The techniques (``tf.debugging.set_log_device_placement``, ``tf.device``,
``tf.config.set_soft_device_placement``, towers with ``tf.add_n``) are written in the notebooks'
cells; the placement log's capture is plumbing, in ``helpers.fdlog``.
"""

from __future__ import annotations

from typing import Any

from helpers.exercises import Feedback, correct, not_yet
from helpers.fdlog import short_device as short_device  # re-exported: the notebooks use it


def accelerator() -> str:
    """The device to pin heavy math to: ``GPU:0`` when there is one, else the second logical
    CPU (``CPU:1``) if set up, else ``CPU:0``."""
    import tensorflow as tf

    if tf.config.list_logical_devices("GPU"):
        return "GPU:0"
    cpus = tf.config.list_logical_devices("CPU")
    return "CPU:1" if len(cpus) > 1 else "CPU:0"


def full_device(name: str) -> str:
    """``CPU:1`` or ``/device:CPU:1`` -> ``/device:CPU:1`` (what ``tf.device`` takes)."""
    return name if name.startswith("/") else f"/device:{name}"


def devices_used(table: Any, kernel_prefix: str) -> list[str]:
    """The devices on which kernels starting with ``kernel_prefix`` ran, in first-seen order
    (``"MatMul"`` also matches oneDNN's ``_MklMatMul``)."""
    kernels = table["kernel"].str.replace(r"^_Mkl", "", regex=True)
    return list(dict.fromkeys(table.loc[kernels.str.startswith(kernel_prefix), "device"]))


def check_pinned(table: Any, device: str = "CPU:1") -> Feedback:
    """Exercise (02): the placement table shows the matmul on ``device``."""
    if not hasattr(table, "columns") or "kernel" not in getattr(table, "columns", []):
        return not_yet("pass the table that log.run(...) returned (the second item).")
    used = devices_used(table, "MatMul")
    if not used:
        return not_yet(
            "the table shows no MatMul: did the function run for the first time inside log.run?"
        )
    if not table["kernel"].astype(str).str.startswith("__inference").any():
        return not_yet(
            "the MatMul ran eagerly: make my_pinned a tf.function (put @tf.function above its def)."
        )
    if used != [short_device(device)]:
        return not_yet(f"the MatMul ran on {used}, not on {short_device(device)}.")
    return correct(f"the MatMul ran on {short_device(device)}, as pinned.")


def check_result_device(answer: Any, actual: Any) -> Feedback:
    """Exercise (02): ``answer`` names the device that holds the tensor ``actual``."""
    want = short_device(getattr(actual, "device", ""))
    if not isinstance(answer, str) or not answer:
        return not_yet("answer with a device name such as 'CPU:0'.")
    if short_device(answer).upper() != want.upper():
        return not_yet(f"{answer!r} is not where the result lives; look at its .device.")
    return correct(f"the result lives on {want}.")


def check_strict(fn: Any) -> Feedback:
    """Exercise (03): ``fn()`` raises for a missing device and leaves soft placement as it was."""
    import tensorflow as tf

    if not callable(fn):
        return not_yet(f"strict_matmul must be a function, got {fn!r}.")
    before = tf.config.get_soft_device_placement()
    try:
        fn()
    except tf.errors.InvalidArgumentError as exc:
        if tf.config.get_soft_device_placement() != before:
            tf.config.set_soft_device_placement(before)
            return not_yet(
                "it raised, but left soft placement switched off: restore it in a finally: block."
            )
        first_sentence = str(exc).splitlines()[0].split(". ")[0]
        return correct(f"it failed loudly: {first_sentence}.")
    except Exception as exc:  # the learner's code
        tf.config.set_soft_device_placement(before)
        return not_yet(f"it raised {type(exc).__name__}, not the placement error: {exc}")
    tf.config.set_soft_device_placement(before)
    return not_yet(
        "it ran without an error, so nothing refused the missing device: inside it, switch soft "
        'placement off and run the matmul under tf.device("/GPU:7").'
    )


def check_towers(result: Any, table: Any, batch: Any) -> Feedback:
    """Exercise (04): ``result`` equals ``batch^T batch``; the table shows matmuls on several
    devices and the ``AddN`` on ``CPU:0``."""
    import tensorflow as tf

    if not hasattr(result, "shape"):
        got = "nothing" if result is None else f"a {type(result).__name__}, not a tensor"
        return not_yet(f"my_towers returned {got}: return the tf.add_n of the two towers.")
    if not hasattr(table, "columns"):
        return not_yet(
            "pass the table that log.run(lambda: my_towers(batch)) returned (the second item)."
        )
    want = tf.matmul(batch, batch, transpose_a=True)
    if tuple(result.shape) != tuple(want.shape):
        return not_yet(f"the result has shape {tuple(result.shape)}, not {tuple(want.shape)}.")
    error = float(tf.reduce_max(tf.abs(result - want)) / (tf.reduce_max(tf.abs(want)) + 1e-12))
    if error > 1e-4:
        return not_yet(
            f"the sum of the towers differs from batch^T batch (relative error {error:.1e})."
        )
    matmuls = sorted(
        {d for kind in ("MatMul", "BatchMatMul", "Einsum") for d in devices_used(table, kind)}
    )
    sums = devices_used(table, "AddN")
    if matmuls != ["CPU:2", "CPU:3"]:
        return not_yet(
            f"the matmuls ran on {matmuls}: put one tower on CPU:2 and the other on CPU:3."
        )
    if sums != ["CPU:0"]:
        return not_yet(
            f"the add_n ran on {sums or 'no device (is there an add_n?)'}, not on CPU:0."
        )
    return correct(f"towers on {', '.join(matmuls)}, summed on CPU:0; same numbers as one matmul.")


def devices_summary(chosen: Any) -> str:
    """Read 02's device-choice runs (one row per ``CUDA_VISIBLE_DEVICES`` value) in one sentence:
    the GPUs each run saw, its logical devices, and which settings TensorFlow refused."""
    if not hasattr(chosen, "iterrows") or chosen.empty:
        raise ValueError("chosen must be the table of the device-choice runs (at least one row)")
    runs = "; ".join(
        f"CUDA_VISIBLE_DEVICES {value!r}: {row['physical GPUs']} GPU(s) found, "
        f"{row['visible GPUs']} visible, logical devices {row['logical devices']}"
        for value, row in chosen.iterrows()
    )
    settings = (
        "memory growth on the CPU",
        "memory_limit on the CPU",
        "a change after the first op",
    )
    refused = [
        name
        for name in settings
        if str(chosen.iloc[0].get(name, "")).split(":")[0].endswith("Error")
    ]
    accepted = [name for name in settings if name not in refused]
    said = f"This run: {runs}. Refused in the first run: {', '.join(refused) or 'none'}"
    return said + (f"; accepted: {', '.join(accepted)}." if accepted else ".")
