"""The image family (``tf.image``): ``codec_ops`` (image files, on Pillow), ``resize_ops``,
``geometry_ops`` (flips, crops, pads), ``color_ops``, ``box_ops``, ``metric_ops`` (PSNR,
SSIM...) and ``patch_ops`` (``extract_image_patches``)."""
