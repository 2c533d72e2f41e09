"""The one masking layer (ascend_grpo.common.secrets): URL credentials with any characters, signature query parameters,
git's credentials out of its argv, the names that say a value is secret, tokens of the well-known shapes, and what
a terminal or a table gets from a job.

Reference values: RFC 3986 (userinfo before the host, ``user:password@``); the pre-signed URL formats of S3
(``X-Amz-Signature``, ``X-Amz-Credential``), Google Cloud Storage (``X-Goog-Signature``), Azure SAS (``sig``);
git's credential helpers (``git help credentials``: a helper is asked ``get`` and answers ``username=``/``password=``
lines; ``GIT_CONFIG_COUNT``/``GIT_CONFIG_KEY_<n>``/``GIT_CONFIG_VALUE_<n>``, git-config(1)); the token formats the
issuers publish (Hugging Face ``hf_``, GitHub ``ghp_`` + 36 and ``github_pat_`` + 22 + ``_`` + 59, AWS ``AKIA`` + 16,
Slack ``xoxb-``, OpenAI ``sk-``, JWT = three base64url parts, RFC 7519); ECMA-48 for the control characters.
"""

import os
import subprocess

import pytest

from ascend_grpo.common import secrets
from ascend_grpo.deps import pins

PASSWORD = "p/ss@w:rd"  # a password with "/", "@" and ":", written unescaped as users do


def test_a_password_with_any_characters_is_masked_whole():
    url = "https://builder:%s@mirror.example.internal/simple" % PASSWORD
    shown = secrets.mask_url("cannot reach %s (timeout)" % url)
    assert shown == "cannot reach https://builder:***@mirror.example.internal/simple (timeout)"
    assert "ss" not in shown.replace("https", "")
    # a user name alone is often a token: masked whole
    assert secrets.mask_url("git+https://ghp_abc123@github.com/o/r.git") == "git+https://***@github.com/o/r.git"
    # the index URL masking the deps stage had is now the same function
    assert pins.mask_url(url) == secrets.mask_url(url)


def test_signature_query_parameters_are_masked():
    s3 = ("https://bucket.s3.amazonaws.com/verl.tar.gz?X-Amz-Algorithm=AWS4-HMAC-SHA256"
          "&X-Amz-Credential=AKIDEXAMPLE%2F20260101&X-Amz-Signature=fe5f80f77d5fa3beca038a248ff027d0445342fe")
    assert secrets.mask_url(s3) == ("https://bucket.s3.amazonaws.com/verl.tar.gz?X-Amz-Algorithm=AWS4-HMAC-SHA256"
                                    "&X-Amz-Credential=***&X-Amz-Signature=***")
    gcs = "https://storage.googleapis.com/b/o?X-Goog-Signature=abcdef0123&X-Goog-Expires=600"
    assert secrets.mask_url(gcs) == "https://storage.googleapis.com/b/o?X-Goog-Signature=***&X-Goog-Expires=600"
    azure = "https://a.blob.core.windows.net/c/verl.tgz?sv=2022-11-02&sig=Zm9vYmFy%3D"
    assert secrets.mask_url(azure) == "https://a.blob.core.windows.net/c/verl.tgz?sv=2022-11-02&sig=***"
    assert secrets.mask_url("https://h/x?token=abc123&Signature=zz") == "https://h/x?token=***&Signature=***"


def test_plain_urls_and_text_are_left_alone_and_masking_is_idempotent():
    for text in ("https://github.com/volcengine/verl.git", "/data/grpo/verl", "git@github.com:o/r.git",
                 "file:///srv/simple", "a user@example.com wrote", ""):
        assert secrets.mask_url(text) == text
        assert not secrets.has_credentials(text)
    once = secrets.mask_url("https://u:%s@h/x?sig=1" % PASSWORD)
    assert secrets.mask_url(once) == once
    assert secrets.has_credentials({"repo": ["https://u:%s@h/x" % PASSWORD]})
    assert secrets.record_mode({"repo": "https://u:pw@h/x"}) == 0o600
    assert secrets.record_mode({"repo": "https://h/x"}) == 0o644


def test_git_gets_its_credentials_from_the_environment_not_argv():
    url = "https://builder:%s@git.example.internal/verl.git" % PASSWORD
    clean, env = secrets.git_url_env(url, {"LANG": "C"})
    assert clean == "https://git.example.internal/verl.git"
    assert env["LANG"] == "C" and env["GRPO_GIT_USERNAME"] == "builder" and env["GRPO_GIT_PASSWORD"] == PASSWORD
    assert env["GIT_CONFIG_COUNT"] == "2" and env["GIT_CONFIG_KEY_1"] == "credential.helper"
    assert PASSWORD not in env["GIT_CONFIG_VALUE_1"]
    # a token as the user name alone
    clean, env = secrets.git_url_env("https://ghp_tok@github.com/o/r.git")
    assert clean == "https://github.com/o/r.git" and env["GRPO_GIT_PASSWORD"] == "ghp_tok"
    # nothing to hide: nothing changes
    assert secrets.git_url_env("https://github.com/o/r.git", {"A": "1"}) == ("https://github.com/o/r.git", {"A": "1"})
    assert secrets.git_url_env("ssh://git@host/o/r.git")[0] == "ssh://git@host/o/r.git"


def test_the_credential_helper_answers_git_as_git_asks(tmp_path):
    """The helper git would run, run as git runs it (sh -c '<helper without !> get'), prints the protocol lines."""
    _clean, env = secrets.git_url_env("https://builder:%s@git.example.internal/verl.git" % PASSWORD)
    helper = env["GIT_CONFIG_VALUE_1"]
    assert helper.startswith("!")
    out = subprocess.run(["sh", "-c", helper[1:] + ' "$@"', "helper", "get"], env=dict(os.environ, **env),
                         capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["username=builder", "password=%s" % PASSWORD]
    stored = subprocess.run(["sh", "-c", helper[1:] + ' "$@"', "helper", "store"], env=dict(os.environ, **env),
                            capture_output=True, text=True, check=True).stdout
    assert stored == ""


@pytest.mark.parametrize("name", ["HF_TOKEN", "HF_AUTH", "WANDB_API_KEY", "GITHUB_PAT", "MY_PAT", "DB_PASSWORD",
                                  "AWS_SECRET_ACCESS_KEY", "OPENAI_KEY", "registry_pass", "GIT_PASSWORD",
                                  "HUGGING_FACE_HUB_TOKEN", "SLACK_SECRET", "grpo_train_wandb_api_key",
                                  "DOCKER_AUTH", "AZURE_SAS_TOKEN"])
def test_names_that_say_secret(name):
    assert secrets.secret_name(name)


@pytest.mark.parametrize("name", ["PATH", "PYTHONPATH", "RAY_AUTH_TOKEN_PATH", "TOKENIZERS_PARALLELISM",
                                  "max_num_batched_tokens", "HCCL_CONNECT_TIMEOUT", "ASCEND_RT_VISIBLE_DEVICES",
                                  "RAY_AUTH_MODE", "PATCH_LEVEL", "KEYBOARD", "HF_ENDPOINT", "PWD",
                                  "OLDPWD"])
def test_names_that_do_not(name):
    assert not secrets.secret_name(name)


def test_secret_values_take_every_secret_named_value_and_the_named_ones():
    values = secrets.secret_values([{"HF_AUTH": "abc def 'q'", "LANG": "C", "X_PAT": "pat-1"},
                                    {"CUSTOM": "c-secret", "EMPTY_TOKEN": ""}],
                                   named=["CUSTOM"], settings=["wandb-key-0123", ""])
    assert sorted(values) == sorted(["abc def 'q'", "pat-1", "c-secret", "wandb-key-0123"])


# examples built to each issuer's published shape (not real tokens)
HF = "hf_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567"
GHP = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
GH_FINE = "github_pat_" + "11ABCDEFG0123456789abc" + "_" + "x" * 59
AKIA = "AKIAIOSFODNN7EXAMPLE"  # AWS's documented example access key id
SK = "sk-" + "proj-" + "Zx9" * 10
XOXB = "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
JWT = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5"
       "MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c")  # RFC 7519-style example of jwt.io


@pytest.mark.parametrize("token", [HF, GHP, GH_FINE, AKIA, SK, XOXB, JWT])
def test_tokens_of_the_usual_shapes_are_found(token):
    text, count = secrets.mask_tokens("export SOMETHING=%s\nlogged in with %s." % (token, token))
    assert token not in text and count == 2


def test_ordinary_words_are_not_tokens():
    text = "verl commit 634bd93f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d, task-1, sk-learn, hf_hub, AKIA"
    assert secrets.mask_tokens(text) == (text, 0)


def test_printable_takes_out_escape_sequences_and_control_characters():
    line = "step:3 \x1b[31mred\x1b[0m \x1b]0;owned title\x07ok\rfake\bX\x00\x9b2J\tend\x1bc"
    assert secrets.printable(line) == "step:3 red okfakeX\tend"
    assert secrets.printable("a\nb", newlines=False) == "a b"
    assert secrets.printable(None) == ""


def test_table_cells_cannot_add_a_row_or_a_column():
    name = "run\n| fake | 99.9 |\x1b[2J"
    cell = secrets.table_cell(name)
    assert "\n" not in cell and "\x1b" not in cell and "|" not in cell.replace("\\|", "")
    assert cell == "run\\n\\| fake \\| 99.9 \\|\\x1b[2J"
    assert secrets.table_cell("qwen2.5-0.5b_step-40") == "qwen2.5-0.5b_step-40"
    assert secrets.table_cell("a\\|b") == "a\\\\\\|b"



def test_a_direct_reference_keeps_its_host_and_a_user_alone_with_a_slash_is_no_user():
    # pip freeze's direct reference (PEP 440 / PEP 508 "name @ url"): the "@" before the revision is no credential
    ref = "verl @ git+https://github.com/volcengine/verl.git@634bd93"
    assert secrets.mask_url(ref) == ref and secrets.mask_userinfo(ref) == (ref, 0)
    assert secrets.mask_userinfo("https://u:%s@h/x https://tok@h/y https://***@h/z" % PASSWORD) == (
        "https://***@h/x https://***@h/y https://***@h/z", 2)


def test_credentials_in_gives_the_parts_a_module_must_never_return():
    assert secrets.credentials_in({"repo": "https://u:%s@h/x" % PASSWORD, "l": ["https://tok123@h/y?sig=abcd"]}) \
        == sorted([PASSWORD, "tok123", "abcd"])
    assert secrets.credentials_in(["https://h/x", "https://u:***@h"]) == []


def test_a_settings_message_shows_a_url_masked():
    """Every refusal of a setting's value shows the value, and a URL in it masked (the check's message is the
    stage's first output)."""
    from ascend_grpo.common import settings

    shown = settings.problems([["source?", "deps_pinning_verl_tarball", "htp://u:%s@x/v.tgz?sig=abc" % PASSWORD],
                               ["source[]", "grpo_find_links", ["ftp://u:%s@h/x" % PASSWORD]],
                               ["git", "deps_pinning_verl_repo", "htps://tok123@h x"]])
    assert len(shown) == 3 and not any(PASSWORD in s or "abc" in s or "tok123" in s for s in shown), shown
    assert shown[0].startswith("deps_pinning_verl_tarball (htp://***@x/v.tgz?sig=***) is not a URL")


def test_git_itself_takes_the_password_from_the_helper_in_the_environment(tmp_path):
    """``git credential fill`` is what git runs before an https request that needs a password: with the
    environment git_url_env gives, it answers the user and password of the URL, with nothing on any command line
    and no configuration file (HOME empty)."""
    _clean, env = secrets.git_url_env("https://builder:%s@git.example.internal/verl.git" % PASSWORD)
    run_env = dict(os.environ, HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path), GIT_CONFIG_NOSYSTEM="1", **env)
    filled = subprocess.run(["git", "credential", "fill"], env=run_env, capture_output=True, text=True, check=True,
                            input="protocol=https\nhost=git.example.internal\npath=verl.git\n\n").stdout
    assert "username=builder\npassword=%s\n" % PASSWORD in filled
