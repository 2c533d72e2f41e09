"""Filter: why docker_container changed a container, from the diff it returns."""

# Keys docker_container puts in its diff that are state, not configuration.
_STATE_KEYS = ("exists", "running", "paused", "restarted")


def container_change_reason(diff):
    """``{{ result.diff | container_change_reason }}`` -> "shm_size: 8589934592 -> 4294967296; ..." when the
    container was recreated for changed settings, "" when it was only created or started (or nothing changed)."""
    before = (diff or {}).get("before") or {}
    after = (diff or {}).get("after") or {}
    if not before.get("exists", True) or not after.get("exists", True):
        return ""  # created from nothing, or removed
    keys = sorted(k for k in set(before) | set(after) if k not in _STATE_KEYS and before.get(k) != after.get(k))
    return "; ".join("%s: %s -> %s" % (k, before.get(k), after.get(k)) for k in keys)


class FilterModule:
    def filters(self):
        return {"container_change_reason": container_change_reason}
