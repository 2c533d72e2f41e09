"""The support bundle: what maintainers ask for when a run fails, with every secret taken out."""
