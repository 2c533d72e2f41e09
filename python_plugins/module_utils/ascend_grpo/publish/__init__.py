"""The publish stage: a merged, evaluated model uploaded to the Hugging Face hub (or a mirror) with its model card."""
