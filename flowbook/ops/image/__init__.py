"""The image family: patches of images (``extract_image_patches``)."""
