"""The train stage: the overrides and their check, the run's plan and size, the run log and its status view, triage
and the doctor."""
