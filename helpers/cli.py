"""Argparse ``type=`` functions for the programs the notebooks write and run in fresh processes
(``cpu_child.py``, ``precision_child.py``, notebook 13's cluster programs, ...). A bad value is
argparse's usage line naming the option, and exit 2, before TensorFlow loads:

    parser.add_argument("--repeats", type=cli.whole(1), default=5)
"""

from __future__ import annotations

import argparse
import json
import math
import os
from collections.abc import Callable
from typing import Any

from helpers import checks


@checks.arguments(minimum=checks.whole(0), maximum=checks.whole(0))
def whole(minimum: int = 1, maximum: int = checks.MAX_COUNT) -> Callable[[str], int]:
    """A whole number from ``minimum`` to ``maximum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        if value > maximum:
            raise argparse.ArgumentTypeError(f"must be at most {maximum:,}, got {value:,}")
        return value

    return parse


@checks.arguments(minimum=checks.number(0.0, 1e12), maximum=checks.number(0.0, 1e12))
def number(minimum: float, maximum: float) -> Callable[[str], float]:
    """A finite number above ``minimum``, at most ``maximum``."""
    if not minimum < maximum:
        raise ValueError(f"minimum must be below maximum, got {minimum:g} and {maximum:g}")

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
        if not math.isfinite(value) or not minimum < value <= maximum:
            raise argparse.ArgumentTypeError(
                f"must be a finite number above {minimum:g}, at most {maximum:g}; got {text!r}"
            )
        return value

    return parse


DAY = 24 * 3600.0  # the longest wait helpers.worker allows


def seconds(text: str) -> float:
    """A number of seconds above 0, at most a day."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds, got {text!r}") from None
    if not math.isfinite(value) or not 0 < value <= DAY:
        raise argparse.ArgumentTypeError(
            f"must be a number of seconds above 0, at most a day ({DAY:g}), got {text!r}"
        )
    return value


def folder(text: str) -> str:
    """A folder path (it may not exist yet), not an existing file."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must name a folder, got an empty string")
    if os.path.exists(text) and not os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text!r} is a file, not a folder")
    return text


def existing_folder(text: str) -> str:
    """A folder that exists."""
    if not os.path.isdir(folder(text)):
        raise argparse.ArgumentTypeError(f"no such folder: {text!r}")
    return text


def existing_file(text: str) -> str:
    """A file that exists."""
    if not text.strip() or not os.path.isfile(text):
        raise argparse.ArgumentTypeError(f"no such file: {text!r}")
    return text


def _no_constant(name: str) -> Any:
    raise ValueError(f"must be a JSON object; NaN and Infinity are not JSON, got {name}")


def json_object(text: str) -> dict[str, Any]:
    """A JSON object, such as '{"jit_compile": true}'."""
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except ValueError as exc:
        if not isinstance(exc, json.JSONDecodeError):  # NaN or Infinity: _no_constant
            raise argparse.ArgumentTypeError(str(exc)) from None
        raise argparse.ArgumentTypeError(
            f"must be a JSON object, {exc.msg} at character {exc.pos}"
        ) from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(
            f"must be a JSON object such as '{{\"jit_compile\": true}}', got {text!r}"
        )
    return value


def host_port(text: str) -> tuple[str, int]:
    """``"host:port"`` or ``"grpc://host:port"``, as ``(host, port)``."""
    host, _, port = text.strip().removeprefix("grpc://").rpartition(":")
    if not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(
            f'must be "grpc://host:port" with a port from 1 to 65535, got {text!r}'
        )
    return host, int(port)
