"""An example goodput-sim plugin: the ``smallest-job-first`` policy, the ``linear-scaling``
batch agent and the ``rolling-maintenance`` dynamic, registered through entry points."""
