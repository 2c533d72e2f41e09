"""Filters: the values a support bundle takes out, and whether a value holds a credential (a file holding it is
0600), over the plain-Python secrets engine."""

from ascend_grpo import secrets


def secret_env_values(envs, named=(), settings=()):
    """``{{ [grpo_train_env, grpo_eval_env, npu_container_env] | secret_env_values(grpo_bundle_secret_env,
    [assets_hub_token, grpo_train_wandb_api_key]) }}`` -> every value of a variable whose name says it is secret
    (TOKEN, KEY, SECRET, PASS, PAT, AUTH, ...) or that ``named`` lists, and the secret settings' values given."""
    return secrets.secret_values([e for e in (envs or []) if isinstance(e, dict)], named or [], settings or [])


def has_credentials(value):
    """``{{ url | has_credentials }}`` -> whether ``value`` (a URL, or lists and mappings of them) holds a
    password, a token as a URL's user, or a signature parameter."""
    return secrets.has_credentials(value)


class FilterModule:
    def filters(self):
        return {"secret_env_values": secret_env_values, "has_credentials": has_credentials}
