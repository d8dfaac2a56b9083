"""The graph optimiser: a pruned plan rewritten for one feed-shape signature.

``optimizer`` runs the passes (constant folding, arithmetic, dead code),
``fuse`` replaces chains of written ops by one fused op, ``layout`` records
what the passes decided and lays out the rewritten plan."""
