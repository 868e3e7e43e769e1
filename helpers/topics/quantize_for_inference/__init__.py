"""Notebook 11, ``notebooks/11_quantize_for_inference.ipynb``.

``quant``, ``quant_models``, ``quant_check``, ``model_latency``: the conversion modes compared;
the data, training, TFLite conversion and LiteRT interpreters; the exercise check; MobileNetV2's
latency against its size.
"""
