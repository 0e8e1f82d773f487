"""Everything that reads saved results: metrics, statistics, reports, HTML, plots and figures.
Nothing here imports the engine, ``sim/`` or ``policies/``."""
