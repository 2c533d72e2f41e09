"""The cluster stage: Ray's nodes and the firewall that keeps their ports to the members (its table written, then
loaded through nft)."""
