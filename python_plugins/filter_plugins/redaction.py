"""Filter: the values a support bundle takes out, over the plain-Python secrets engine."""

from ascend_grpo import secrets


def secret_env_values(envs, named=(), settings=()):
    """``{{ [grpo_train_env, grpo_eval_env, npu_container_env] | secret_env_values(grpo_bundle_secret_env,
    [assets_hub_token, grpo_train_wandb_api_key]) }}`` -> every value of a variable whose name says it is secret
    (TOKEN, KEY, SECRET, PASS, PAT, AUTH, ...) or that ``named`` lists, and the secret settings' values given."""
    return secrets.secret_values([e for e in (envs or []) if isinstance(e, dict)], named or [], settings or [])


class FilterModule:
    def filters(self):
        return {"secret_env_values": secret_env_values}
