"""The deps stage: the pins, the pip runner of a pinned venv, the stack files, verl's checkout and the tarball proof."""
