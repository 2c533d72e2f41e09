"""What every stage shares: the workspace's no-follow writes, detached jobs, secrets masking, the settings' checks, the rerun command."""
