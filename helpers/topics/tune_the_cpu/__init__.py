"""Notebook 10, ``notebooks/10_tune_the_cpu.ipynb``.

``cputune``, ``cputune_settings``, ``cpu_report``, ``cpu_drift``, ``fastest_check``: workloads
timed in fresh processes; the setting each process starts with (threads, oneDNN, OpenMP,
allocator) and the named sweeps; the allocator and OpenMP runtime a process loaded, sweep
figures, the wheel's instruction sets; the default setting's drift between sections against the
sweeps' leads; the exercise check. Notebook 08 draws its sweep with ``cpu_report``.
"""
