"""Array kernels that are more than one numpy call: pure functions of arrays.

Nothing here sees a Tensor, Graph or Device: ``gemm`` splits large matrix
products across cores, ``philox`` and ``philox_sampling`` are TensorFlow's
random stream, ``windows``/``conv_patches``/``pool_kernels``/``bias_kernels``
serve convolution and pooling, ``special_kernels`` the special functions.
The op families (:mod:`flowbook.ops`) call them from their kernel bodies."""
