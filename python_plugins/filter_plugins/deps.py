"""Filters for the deps stage, over the plain-Python pins engine."""

from ascend_grpo import pins, stack


def pip_index_args(site):
    """``{{ deps_pinning_site | pip_index_args }}`` -> pip options for the site's index settings."""
    return pins.index_args({}, None, site or {})


def pip_error(text, index_args=()):
    """``{{ result.stderr | pip_error(args) }}`` -> pip's failure in words a user can act on."""
    return stack.explain_pip_error(text or "", list(index_args or []))


def pip_index_env(urls):
    """``{{ {'index_url': ..., 'extra_index_urls': [...]} | pip_index_env }}`` -> PIP_INDEX_URL and
    PIP_EXTRA_INDEX_URL for a task's environment: an index URL may hold a password, and pip's command line is
    visible to every user of the host."""
    return pins.index_env(pins.index_args({}, None, {k: v for k, v in (urls or {}).items() if v}))[1]


def mask_url(text):
    """``{{ url | mask_url }}`` -> the URL (or any text) with its credentials masked."""
    return pins.mask_url(text)


class FilterModule:
    def filters(self):
        return {"pip_index_args": pip_index_args, "pip_error": pip_error, "pip_index_env": pip_index_env,
                "mask_url": mask_url}
