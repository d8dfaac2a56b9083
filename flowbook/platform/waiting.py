"""How a flowbook thread waits: in short slices, so an interrupt or a deadline gets through.

Python delivers a KeyboardInterrupt (Jupyter's Interrupt button) to the main
thread only between bytecodes, and a blocking ``Event.wait()`` or
``Queue.get()`` with no timeout holds it off until the wait ends.  Every wait
in flowbook that may last (the scheduler waiting for pool kernels or parked
ops, a synchronous wait on a queue, the caller of a split matrix product
waiting for its helpers' bands) therefore blocks for at most
``WAIT_SLICE_S`` at a time, then looks at the clock and the stop flags.

    >>> import threading
    >>> done = threading.Event(); done.set()
    >>> done.wait(WAIT_SLICE_S)
    True
"""

WAIT_SLICE_S = 0.05  # longest single block of any wait: Ctrl-C and deadlines get through

__all__ = ["WAIT_SLICE_S"]
