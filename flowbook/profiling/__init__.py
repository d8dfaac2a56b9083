"""See where the time goes: per-op step stats, traces, profiles, and the optimiser's view.

``tracing`` builds the tracer ``RunOptions(trace_level=FULL_TRACE)`` asks for
and ``profile()``; ``timeline`` writes Chrome/Perfetto traces;
``profile_table`` the profile's tables; ``optimized_plan`` shows what the graph
optimiser did to a run.  All of them watch a run through observers."""
