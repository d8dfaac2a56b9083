"""The run core: what ``Session.run`` hands a fetch to, in reading order.

- ``placement``: which device each op runs on, and the copies across devices;
- ``plan``: the fixed layout of one run (pruned ops, order, consumers, pending
  counts, last uses), built once per (fetches, feeds, targets);
- ``compile``: what runs of a plan learn (``RunPath``): the straight-line
  function, its timed twin, output shapes given the feeds;
- ``plan_cache``: a session's plans and paths by run signature, kept while ops
  are added, dropped when an op they hold is edited;
- ``executor``: ``execute``, the one front door, and ``Schedule``, the scheduler
  state the threaded loop and the Stepper share;
- ``observers`` and ``timings``: the callbacks a run reports to, and the timer
  that wraps kernels;
- ``values``: feeds checked as TensorFlow checks them, fetches flattened and
  results packed in their shape;
- ``gpu``: the CuPy device, found once per process.

Every module here imports only the graph and op layers below it (and each
other, downward in the list above); ``flowbook.session`` sits on top.
Importing this package imports none of them.
"""
