"""Compiled run paths: the code generators that stand in for the scheduler.

``compile`` learns what runs of one plan need and generates straight-line
functions (and their timed twins); ``compiled_loops`` runs an innermost
``while_loop`` as one Python ``while``.  Differential tests hold every
generated path to the scheduler's results."""
