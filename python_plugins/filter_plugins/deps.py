"""Filters for the deps stage, over the plain-Python pins engine."""

from ascend_grpo import pins, stack


def pip_index_args(site):
    """``{{ deps_pinning_site | pip_index_args }}`` -> pip options for the site's index settings."""
    return pins.index_args({}, None, site or {})


def pip_error(text, index_args=()):
    """``{{ result.stderr | pip_error(args) }}`` -> pip's failure in words a user can act on."""
    return stack.explain_pip_error(text or "", list(index_args or []))


class FilterModule:
    def filters(self):
        return {"pip_index_args": pip_index_args, "pip_error": pip_error}
