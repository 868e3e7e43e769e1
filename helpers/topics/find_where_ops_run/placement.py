"""Device names and notebook 02's exercise checks; notebooks 03 and 04 reuse the names.

The techniques (``tf.debugging.set_log_device_placement``, ``tf.device``) are written in the
notebook's cells; the placement log's capture is plumbing, in ``helpers.fdlog``. Notebooks 03 and
04 have their exercise checks in their own packages."""

from __future__ import annotations

import re
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


def devices_used(table: Any, type_prefix: str) -> list[str]:
    """The devices on which ops whose type starts with ``type_prefix`` ran, in first-seen order
    (``"MatMul"`` also matches oneDNN's ``_MklMatMul``)."""
    kinds = table["type"].astype(str).str.replace(r"^_Mkl(?:Native)?(?=[A-Z])", "", regex=True)
    return list(dict.fromkeys(table.loc[kinds.str.startswith(type_prefix), "device"]))


def check_pinned(table: Any, device: str = "CPU:1") -> Feedback:
    """Exercise (02): the placement table shows the matmul on ``device``."""
    if not hasattr(table, "columns") or not {"type", "device"} <= set(table.columns):
        return not_yet("pass the table that log.run(...) returned (the second item).")
    used = devices_used(table, "MatMul")
    if not used:
        return not_yet(
            "the table shows no MatMul: does my_pinned compute tf.matmul, and did it run for "
            "the first time inside log.run?"
        )
    if not table["type"].astype(str).str.startswith("__inference").any():
        named = "op" in table.columns and (table["op"].astype(str) != table["type"].astype(str))
        if named is not False and named.any():  # a graph's nodes carry their own names
            return not_yet(
                "this table is a graph's (a TF1 session's, or another cell's): pass the table "
                "that log.run returned for my_pinned."
            )
        return not_yet(
            "the MatMul ran eagerly: make my_pinned a tf.function (@tf.function above its def), "
            "and pass the table that log.run returned for it, not another cell's."
        )
    want = short_device(device).lstrip("/").upper()  # "CPU:1", "/CPU:1" or "/device:CPU:1"
    if used != [want]:
        return not_yet(
            f"the MatMul ran on {', '.join(map(str, used))}, not on {want}: "
            f"inside the function, put the matmul under with tf.device('/{want}')."
        )
    return correct(f"the MatMul ran on {want}, as pinned.")


def device_name(answer: Any) -> str | None:
    """A device as a learner may give it -> ``CPU:1``: a name in any spelling TensorFlow reads
    (``"CPU:1"``, ``"/cpu:1"``, ``"/job:localhost/replica:0/task:0/device:CPU:1"``), a
    ``tf.config.LogicalDevice`` or a ``tf.DeviceSpec``; None if it names no single device."""
    import tensorflow as tf

    if isinstance(getattr(answer, "name", None), str):  # tf.config.LogicalDevice
        answer = answer.name
    if isinstance(answer, tf.DeviceSpec):
        answer = answer.to_string()
    if not isinstance(answer, str) or not answer.strip():
        return None
    text = answer.strip()
    try:
        spec = tf.DeviceSpec.from_string(text if text.startswith("/") else "/" + text)
    except (ValueError, TypeError):
        return None
    if not spec.device_type or spec.device_index is None:
        return None
    return f"{spec.device_type.upper()}:{spec.device_index}"


def check_result_device(answer: Any, actual: Any) -> Feedback:
    """Exercise (02): ``answer`` names the device that holds the tensor ``actual``."""
    if not isinstance(getattr(actual, "device", None), str) or "device:" not in actual.device:
        return not_yet("pass the result tensor itself as the second argument.")
    want = short_device(actual.device)
    said = device_name(answer)
    name = getattr(answer, "name", answer)
    if isinstance(name, str) and "physical_device:" in name:
        return not_yet(
            f"{name!r} is a physical device: answer with a logical device's name, such as 'CPU:1'."
        )
    if isinstance(answer, str) and re.fullmatch(r"/?(device:)?[A-Za-z]+", answer.strip()):
        return not_yet(f"{answer!r} names a kind of device: give its index too, as in 'CPU:1'.")
    if said is None:
        if isinstance(answer, str) and answer.strip():
            return not_yet(f"{answer!r} is not where the result lives; look at its .device.")
        return not_yet("answer with a device name such as 'CPU:0'.")
    if said != want.upper():
        return not_yet(f"{answer!r} is not where the result lives; look at its .device.")
    return correct(f"the result lives on {want}.")


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
