"""Notebook 07's exercise check: cache after the decode, augment after the cache, parallel maps."""

from __future__ import annotations

import hashlib
import inspect
import re
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from helpers import checks
from helpers.exercises import Feedback, correct, counting_calls, not_yet
from helpers.topics.tune_input_pipeline.pipelines_measure import MAX_IMAGES, lesson

READERS = ("TFRecordDataset", "Interleave", "FlatMap")  # ops that turn file names into records


DECODES = ("decode_jpeg", "decode_image", "decode_and_crop_jpeg")  # counted, in tf.io and tf.image
DECODE_OPS = {"DecodeJpeg", "DecodeImage", "DecodeAndCropJpeg"}  # what they put in a graph


def dataset_graph(dataset: Any) -> Any:
    """The dataset's graph as built, before tf.data's own rewrites; None where TensorFlow
    cannot serialize it (nothing to say then, rather than a wrong word)."""
    import tensorflow as tf

    graph = tf.compat.v1.GraphDef()
    try:
        graph.ParseFromString(
            tf.raw_ops.DatasetToGraphV2(
                input_dataset=dataset._variant_tensor,  # noqa: SLF001 - the one handle to the graph
                external_state_policy=1,  # ignore: random augmentation is stateful on purpose
            ).numpy()
        )
    except Exception:  # a dataset TensorFlow cannot serialize
        return None
    return graph


def _called(attrs: Any) -> list[str]:
    """The functions a node's attributes name (a map's function, an interleave's, ...)."""
    return [v.func.name for v in attrs.values() if v.func.name] + [
        f.name for v in attrs.values() for f in v.list.func
    ]


def _runs(functions: dict[str, Any], names: list[str], match: Any, seen: set[str]) -> bool:
    """Whether one of the functions ``names`` (or one they call) holds an op ``match`` accepts."""
    for name in set(names) - seen:
        seen.add(name)
        body = functions.get(name)
        if body is not None and any(
            match(n.op) or _runs(functions, _called(n.attr), match, seen) for n in body.node_def
        ):
            return True
    return False


def _upstream(nodes: dict[str, Any], name: str, found: set[str]) -> set[str]:
    """The dataset nodes a node reads from, directly or through others."""
    for source in nodes[name].input:
        source = source.split(":")[0].lstrip("^")
        if source in nodes and source not in found:
            found.add(source)
            _upstream(nodes, source, found)
    return found


def _decodes_in_graph(graph: Any, traced_from: int = 0) -> tuple[int, int, list[str], int]:
    """From the graph: how many dataset nodes run a JPEG decode in their function (or in one it
    calls), how many of those sit before a cache, the files caches write to, and how many of
    the decoding nodes were traced before ``traced_from`` (TensorFlow ends a traced function's
    name with a number from ``ops.uid()``: one read before the answer ran tells a dataset built
    earlier, whose cache may be full). Read where the count of calls saw none: a decode function
    bound before the check ran (``jpeg = tf.io.decode_jpeg``) is called past the counter."""
    import tensorflow as tf

    functions = {f.signature.name: f for f in graph.library.function}
    nodes = {node.name: node for node in graph.node}

    def traced(node: Any) -> int:  # the node's own function's number; unknown: not earlier
        numbers = [int(m[1]) for name in _called(node.attr) if (m := re.search(r"_(\d+)$", name))]
        return min(numbers, default=traced_from)

    decoding = {
        n.name
        for n in graph.node
        if _runs(functions, _called(n.attr), DECODE_OPS.__contains__, set())
    }
    earlier = sum(traced(nodes[name]) < traced_from for name in decoding)
    caches = [n for n in graph.node if n.op.startswith("CacheDataset")]
    before = set().union(*(_upstream(nodes, c.name, set()) for c in caches)) if caches else set()
    files = []
    for cache in caches:  # CacheDataset(input, filename, ...): "" caches in memory
        filename = nodes.get(cache.input[1].split(":")[0]) if len(cache.input) > 1 else None
        if filename is not None and filename.op == "Const":
            name = tf.make_ndarray(filename.attr["value"].tensor).item()
            files.append(name.decode(errors="replace") if isinstance(name, bytes) else str(name))
    return len(decoding), len(decoding & before), [f for f in files if f], earlier


def pipeline_faults(dataset: Any, graph: Any = None) -> list[str]:
    """What the dataset's graph (as built, before tf.data's own rewrites; ``graph`` where it was
    read already) shows against the exercise: a random op before a cache, a shuffle of records
    between the reader and the cache, or a map without parallel calls. Empty where the graph
    cannot be read."""
    import tensorflow as tf

    graph = dataset_graph(dataset) if graph is None else graph
    if graph is None:
        return []
    nodes = {node.name: node for node in graph.node}
    functions = {f.signature.name: f for f in graph.library.function}
    caches = [n.name for n in graph.node if n.op.startswith("CacheDataset")]
    before = set().union(*(_upstream(nodes, c, set()) for c in caches)) if caches else set()
    random = [  # a random op in a function before a cache, or a Dataset.random stream
        n
        for n in before
        if "Random" in nodes[n].op
        or _runs(functions, _called(nodes[n].attr), lambda op: "Random" in op, set())
    ]

    def shuffled_records(name: str) -> bool:  # walks up from a cache, stopping at the reader
        for source in nodes[name].input:
            node = nodes.get(source.split(":")[0].lstrip("^"))
            if node is None or "Dataset" not in node.op or any(r in node.op for r in READERS):
                continue  # a constant, or the reader: a shuffle of file names above it is fine
            if node.op.startswith("ShuffleDataset") or shuffled_records(node.name):
                return True
        return False

    faults = []
    if random:
        faults.append(
            "a random op runs before the cache: the cache keeps its first draws and replays them "
            "every epoch. Put every random op (crop, flip, seeds) after the cache."
        )
    if any(n.op.startswith("CacheDataset") and shuffled_records(n.name) for n in graph.node):
        faults.append(
            "a shuffle before the cache: the cache keeps the first epoch's order and replays it. "
            "Shuffle after the cache."
        )
    sequential = [n for n in graph.node if n.op == "MapDataset"]
    for n in (
        graph.node
    ):  # ParallelMapDatasetV2(input, captured..., num_parallel_calls): 1 is one thread
        inputs = [name for name in n.input if not name.startswith("^")]
        if n.op.startswith("ParallelMapDataset") and len(inputs) > 1:
            calls = nodes.get(inputs[-1].split(":")[0])
            if calls is not None and calls.op == "Const":
                if tf.make_ndarray(calls.attr["value"].tensor).item() == 1:
                    sequential.append(n)
    if sequential:
        faults.append(
            f"{len(sequential)} map(s) without parallel calls: make the maps parallel, "
            "map(..., num_parallel_calls=tf.data.AUTOTUNE)."
        )
    return faults


@checks.arguments(n_images=checks.whole(1, MAX_IMAGES))
def check_reordered(make: Any, shards: Sequence[str], n_images: int) -> Feedback:
    """Exercise (07): ``make(shards)`` reads each image once per epoch, decodes each only in the
    first of two epochs (JPEG decodes counted), augments afresh (not the same images, in any
    order) and maps in parallel."""
    import numpy as np
    import tensorflow as tf
    from tensorflow.python.framework import ops  # uid(): the number TensorFlow gives a trace

    epochs: list[set[bytes]] = [set(), set()]
    seen = 0
    with ExitStack() as stack:
        counts = [stack.enter_context(counting_calls((tf.io, tf.image), n)) for n in DECODES]
        # The decode function is given only to an answer that takes one (the notebook's stub does).
        traced_from = ops.uid()  # functions traced from here on are the answer's own
        try:
            takes = "decode" in inspect.signature(make).parameters
            dataset = (
                make(list(shards), decode=lesson().decode_record) if takes else make(list(shards))
            )
        except Exception as exc:  # the learner's code
            return not_yet(f"calling your function raised {type(exc).__name__}: {exc}")
        graph = dataset_graph(dataset)
        try:  # read where no decode is counted; a graph or file name it cannot read says nothing
            decoding, cached, files, earlier = _decodes_in_graph(graph, traced_from)
            written = [f for f in files if Path(f"{f}.index").exists()]  # before this check ran
        except Exception:
            graph, decoding, cached, earlier, written = None, 0, 0, 0, []
        try:
            if int(dataset.cardinality()) == int(tf.data.INFINITE_CARDINALITY):
                return not_yet(
                    "the pipeline repeats forever: leave .repeat() out, one pass is one epoch."
                )
            # One iterator: with a global seed, a second would replay the first one's random draws.
            for element in dataset.repeat(2):
                batch = np.asarray(element[0])
                if batch.ndim != 4:
                    return not_yet(
                        f"each element should be a batch of images [batch, height, width, 3], "
                        f"got shape {list(batch.shape)}: end the pipeline with .batch(64)."
                    )
                for image in batch:  # hashes, not images: two epochs at full size fit anywhere
                    epochs[min(seen // n_images, 1)].add(hashlib.sha1(image.tobytes()).digest())
                    seen += 1
        except Exception as exc:  # the learner's code
            return not_yet(f"reading your pipeline raised {type(exc).__name__}: {exc}")
        counted = sum(int(count.numpy()) for count in counts)
    if seen != 2 * n_images:
        return not_yet(f"two epochs gave {seen} images, not {n_images} each: no repeat, no drop.")
    if epochs[0] == epochs[1]:
        return not_yet(
            "the second epoch replayed the first one's images (in some order): the augmentation "
            "is cached (augmentation before the cache), or its seeds repeat every epoch "
            "(Dataset.random needs rerandomize_each_iteration=True)."
        )
    repeated = len(epochs[0] & epochs[1])  # a fresh crop and flip repeat about 1 in 162 images
    if graph is None and n_images >= 64 and 4 * repeated > len(epochs[1]):  # no graph to read
        return not_yet(
            f"{repeated} of the second epoch's {len(epochs[1])} distinct images were in the first "
            "as well: part of the augmentation is cached (a random op before the cache), or its "
            "draws repeat. Put every random op after the cache."
        )
    if counted == 0 and written:
        return not_yet(
            "no JPEG was decoded in either epoch: the images came from a cache file from an "
            "earlier run (cache(filename) keeps it; use cache() in memory, or delete the file)."
        )
    if counted == 0 and (not decoding or earlier):
        return not_yet(
            "no JPEG was decoded in either epoch: the images came from somewhere already "
            "filled, such as a dataset built and cached before this check"
            + (" or a cache file from an earlier run" if graph is None else "")
            + ": build the pipeline from `paths` inside your function."
        )
    if counted == 0 and cached < decoding:  # decodes the check could not count: read the graph
        return not_yet(
            "no cache holds your decoded images, so every epoch decodes again: add .cache() "
            "right after the decode."
        )
    if counted not in (0, n_images):
        return not_yet(
            f"{counted} JPEG decodes for {n_images} images over two epochs: cache right after the "
            "decode, so that only the first epoch decodes."
        )
    faults = pipeline_faults(dataset, graph)
    if faults:
        return not_yet(faults[0])
    decoded = (
        f"{n_images} decodes" if counted else "decoding before the cache (read from the graph)"
    )
    return correct(
        f"{decoded} for two epochs of {n_images} images, fresh augmentation in each, "
        "and parallel maps."
    )
