"""The graph and what it is made of: the lowest layer, imported by every other.

``graph`` (the Graph and its scopes), ``tensor`` (Operation and Tensor),
``registry`` (every op's one declaration, an ``OpDef``), ``dtypes`` and
``tensor_shape`` (static types and shapes), ``errors`` (TensorFlow's error
classes), ``names`` and ``source`` (op names and the cell/line that made an
op), ``devices``, ``graph_edit`` (what a re-run cell does to its old ops),
``hooks`` (the few late-bound calls upward), ``versions``, ``nest``, ``limits``."""
