"""Filter: why docker_container changed a container, from the diff it returns."""

# Keys docker_container puts in its diff that are state, not configuration.
_STATE_KEYS = ("exists", "running", "paused", "restarted")
# Settings whose entries are KEY=VALUE: only the names are told (values may be tokens).
_NAMED_ENTRIES = ("env",)


def _entries(key, values):
    if key in _NAMED_ENTRIES:
        return {str(v).split("=", 1)[0]: str(v) for v in values}
    return {str(v): str(v) for v in values}


def _list_reason(key, before, after):
    old, new = _entries(key, before), _entries(key, after)
    parts = []
    gone = sorted(set(old) - set(new))
    added = sorted(set(new) - set(old))
    changed = sorted(k for k in set(old) & set(new) if old[k] != new[k])
    if gone:
        parts.append("%s left over on the container, removed" % ", ".join(gone))
    if added:
        parts.append("%s added" % ", ".join(added))
    if changed:
        parts.append("%s changed" % ", ".join(changed))
    return "%s: %s" % (key, "; ".join(parts) if parts else "order changed")


def container_change_reason(diff):
    """``{{ result.diff | container_change_reason }}`` -> "shm_size: 8589934592 -> 4294967296; ..." when the
    container was recreated for changed settings, "" when it was only created or started (or nothing changed).
    A list setting names its entries that went or came (environment variables by name only)."""
    before = (diff or {}).get("before") or {}
    after = (diff or {}).get("after") or {}
    if not before.get("exists", True) or not after.get("exists", True):
        return ""  # created from nothing, or removed
    keys = sorted(k for k in set(before) | set(after) if k not in _STATE_KEYS and before.get(k) != after.get(k))
    reasons = []
    for key in keys:
        old, new = before.get(key), after.get(key)
        if isinstance(old, (list, tuple)) and isinstance(new, (list, tuple)):
            reasons.append(_list_reason(key, old, new))
        elif key in _NAMED_ENTRIES:
            reasons.append("%s changed" % key)
        else:
            reasons.append("%s: %s -> %s" % (key, old, new))
    return "; ".join(reasons)


class FilterModule:
    def filters(self):
        return {"container_change_reason": container_change_reason}
