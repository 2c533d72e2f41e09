"""The deps stage: the pins, the pip runner and the install of a pinned venv, the stack files, verl's checkout and
the tarball proof."""
