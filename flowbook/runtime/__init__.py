"""The runtime: what ``Session.run`` does with a fetch, in reading order.

- ``session``: ``Session`` and ``InteractiveSession``, the front of a run;
  ``config`` holds ``ConfigProto``/``RunOptions``, ``run_args`` reads a run's
  fetches and feeds once, ``values`` checks feeds and packs results;
- ``placement``: which device each op runs on, and the copies across devices
  (``gpu`` is the CuPy device, ``gpu_sim`` a simulated one for tests);
- ``plan``: the fixed layout of one run (pruned ops, order, consumers, pending
  counts, last uses), built once per (fetches, feeds, targets); ``plan_cache``
  keeps a session's plans by run signature across graph edits;
  ``memory_plan`` frees values at their last use;
- ``optimize/``: the graph optimiser's passes over a plan;
- ``codegen/``: the straight-line and compiled-loop fast paths;
- ``executor``: ``execute``, the one front door, which chooses the path;
  ``scheduler``: the one ready-queue state machine every interpreted run (and
  the Stepper) goes through, with the propagation rule plugged in: flat for a
  DAG, ``frames`` (over ``frame_layout``) for branches and loops; ``pool`` is
  the thread pool heavy kernels run on;
- ``observers``, ``timings`` and ``step_stats``: the callbacks a run reports
  to, the timer that wraps kernels, and the records it writes;
- ``op_errors``: a kernel's failure as the OpError a user reads;
- ``blas`` and ``heap``: process-wide settings made once.

Importing this package imports none of them.
"""
