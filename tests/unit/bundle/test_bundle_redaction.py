"""The support bundle's redaction, by value and by pattern: what the bundle missed before (values with spaces or
quotes, names outside its list such as HF_AUTH, *_KEY, *_PAT, pre-signed URL signatures, passwords holding "/",
the wandb key) and tokens of the shapes their issuers publish.

Reference values: the issue's list; the token formats (Hugging Face "hf_", GitHub "ghp_" + 36 base62 and
"github_pat_" + 22 + "_" + 59, AWS's documented example key id AKIAIOSFODNN7EXAMPLE, Slack "xoxb-", OpenAI "sk-",
RFC 7519 JWTs as jwt.io shows them); S3 and GCS pre-signed URLs (X-Amz-Signature, X-Goog-Signature), Azure SAS
(sig).
"""

import ast
import os

import pytest
import yaml

from ascend_grpo.bundle import support_bundle
from ascend_grpo.common import secrets

from grpo_testkit import ROOT  # noqa: E402
WANDB = "0123456789abcdef0123456789abcdef01234567"  # a wandb API key: 40 hex characters


def redacted(text, values=()):
    return support_bundle.redact(text, support_bundle.secrets_of(list(values)))


@pytest.mark.parametrize("line, secret, shown", [
    ("export HF_AUTH='my hub secret'", "my hub secret", "export HF_AUTH='***'"),
    ('WANDB_API_KEY="with \\"quotes\\" inside"', 'with \\"quotes\\" inside', 'WANDB_API_KEY="***"'),
    ("OPENAI_KEY=plainvalue123 next", "plainvalue123", "OPENAI_KEY=*** next"),
    ("GITHUB_PAT: patvalue-987", "patvalue-987", "GITHUB_PAT: ***"),
    ('{"MY_PAT": "a b c d"}', "a b c d", '{"MY_PAT": "***"}'),
    ("registry_pass=hunter2/x", "hunter2/x", "registry_pass=***"),
])
def test_secret_named_values_go_whole(line, secret, shown):
    out, count = redacted(line)
    assert out == shown and count == 1 and secret not in out


def test_values_given_go_wherever_they_appear_also_json_escaped_and_shell_quoted():
    value = "pass word 'with' \"quotes\""
    text = "raw: %s\njson: %s\nsh: export X=%s\n" % (value, '"pass word \'with\' \\"quotes\\""',
                                                      "'pass word '\"'\"'with'\"'\"' \"quotes\"'")
    out, count = redacted(text, [value])
    assert "pass word" not in out and count == 3


@pytest.mark.parametrize("url, shown", [
    ("https://builder:p/ss@w:rd@mirror.example/simple", "https://***@mirror.example/simple"),
    ("https://bucket.s3.amazonaws.com/v.tgz?X-Amz-Credential=AKID%2F1&X-Amz-Signature=fe5f80f7",
     "https://bucket.s3.amazonaws.com/v.tgz?X-Amz-Credential=***&X-Amz-Signature=***"),
    ("https://storage.googleapis.com/b/o?X-Goog-Signature=0a1b2c",
     "https://storage.googleapis.com/b/o?X-Goog-Signature=***"),
    ("https://a.blob.core.windows.net/c/v?sv=1&sig=Zm9v%3D", "https://a.blob.core.windows.net/c/v?sv=1&sig=***"),
])
def test_url_credentials_and_signatures_go_by_pattern(url, shown):
    out, count = redacted("fetching %s now" % url)
    assert out == "fetching %s now" % shown and count >= 1


@pytest.mark.parametrize("token", [
    "hf_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567",
    "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "github_pat_" + "11ABCDEFG0123456789abc" + "_" + "y" * 59,
    "AKIAIOSFODNN7EXAMPLE",
    "sk-" + "Zx9" * 12,
    "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
])
def test_tokens_of_the_usual_shapes_go_by_pattern_in_free_text(token):
    out, count = redacted("the job printed %s in a log line" % token)
    assert token not in out and count == 1


def test_ordinary_lines_keep_their_values():
    text = ("max_num_batched_tokens: 512\nRAY_AUTH_TOKEN_PATH=/data/grpo/.grpo/ray/auth_token\n"
            "ray_cluster_auth: token\nRAY_AUTH_MODE=token\nTOKENIZERS_PARALLELISM=false\n"
            "verl @ git+https://github.com/volcengine/verl.git@634bd93f\nstep:3 - score:0.5\n")
    assert support_bundle.redact(text, []) == (text, 0)


def _bundle_secrets_expression():
    with open(os.path.join(ROOT, "playbooks", "bundle.yml")) as handle:
        plays = yaml.safe_load(handle)
    for play in plays:
        for task in play.get("tasks") or []:
            found = (task.get("vars") or {}).get("grpo_bundle_secrets")
            if found:
                return found
    raise AssertionError("bundle.yml passes no grpo_bundle_secrets")


def test_bundle_playbook_passes_the_wandb_key_and_every_secret_named_env_value():
    """bundle.yml's expression for the role's secrets, rendered with the package's filter: the wandb key, the hub
    token, the registry password, every secret-named env value and the named ones; nothing else."""
    import jinja2

    from common_filters import FilterModule

    env = jinja2.Environment()
    env.filters.update(FilterModule().filters())
    rendered = env.from_string(_bundle_secrets_expression()).render(
        grpo_train_env={"HF_AUTH": "hub auth", "LANG": "C.UTF-8"}, grpo_eval_env={"MY_PAT": "pat-0001"},
        npu_container_env={"PLAIN": "marked-value", "ASCEND_RT_VISIBLE_DEVICES": "0,1"},
        grpo_bundle_secret_env=["PLAIN"], assets_hub_token="hf-token-value", npu_container_registry_password="",
        grpo_train_wandb_api_key=WANDB, grpo_train_notify_url=WEBHOOK)
    assert sorted(ast.literal_eval(rendered.strip())) == sorted(
        ["hub auth", "pat-0001", "marked-value", "hf-token-value", WANDB, WEBHOOK])


def test_the_notifications_webhook_is_taken_out_of_a_bundle():
    out, count = redacted("posting to %s failed\n" % WEBHOOK, secrets.secret_values([], (), [WEBHOOK]))
    assert WEBHOOK not in out and "T0000/B0000" not in out and count == 1


# a Slack incoming webhook's shape (https://api.slack.com/messaging/webhooks): the path is the secret
WEBHOOK = "https://hooks.slack.com/services/T0000/B0000/XXXXXXXXXXXXXXXXXXXXXXXX"


def test_a_wandb_key_given_as_a_setting_is_taken_out():
    out, count = redacted("wandb: logging in with %s\n" % WANDB, secrets.secret_values([], (), [WANDB]))
    assert WANDB not in out and count == 1
