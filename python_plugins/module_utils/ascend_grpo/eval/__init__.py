"""The eval stage: the checkpoint chosen, OpenCompass's results and the report."""
