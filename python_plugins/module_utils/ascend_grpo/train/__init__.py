"""The train stage: the overrides and their check, the run's plan and size, the run log, triage and the doctor."""
