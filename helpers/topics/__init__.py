"""Per-notebook support, one package per notebook, named by it: ``notebooks/NN_<slug>.ipynb``
is backed by ``helpers/topics/<slug>/`` (exercise checks, data generation, experiments that start
fresh processes, readings, figures, and the ``BENCHMARKS`` the notebook registers, whose ids start
with ``<slug>.``). Its tests are in ``tests/topics/<slug>/``; the lesson code the notebook exports
is ``helpers.lessons.<slug>``. Each package's docstring lists its modules. Data several notebooks
share is in ``helpers.datasets``; plumbing (timing, widgets, processes, logs) is in ``helpers``.

The lesson code itself is in the notebooks (and, where something else reuses it, exported to
``helpers.lessons``). A notebook that reuses an earlier notebook's support imports it from that
notebook's package, so the import line says where it comes from.
"""
