"""Helpers behind the TensorFlow Performance Workbook notebooks.

One small module per notebook topic (``graphs``, ...) plus shared pieces: ``timing`` (honest
timing), ``widgets`` (the comparison widget), ``env`` (machine report, logical devices, the
scale knob), ``bench`` (the benchmark runner), ``fileio`` and ``nbtools``. Importing this
package does nothing else: import the module you need, e.g. ``from helpers import timing``.
"""

__version__ = "0.1.0"
