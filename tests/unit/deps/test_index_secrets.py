"""An index URL with a password: never on pip's command line (``ps`` shows every user of the host each process's
arguments), never in the deps stage's result or messages, and a URL that is no URL refused before anything.

pip reads PIP_INDEX_URL and PIP_EXTRA_INDEX_URL (several URLs separated by whitespace) as it reads --index-url and
--extra-index-url (pip's user guide, "Environment Variables"); Ansible masks the values of a module's no_log options
wherever they appear in its result.
"""

import json
import os

from grpo_testkit import fake_pip_python, run_module

from ascend_grpo.common import settings
from ascend_grpo.deps import pins

SECRET = "s3cr3t-index-pass"
URL = "https://builder:%s@mirror.example.internal/simple" % SECRET


def test_index_options_move_to_pips_environment():
    argv, env = pins.index_env(
        ["python", "-m", "pip", "install", "--index-url", URL, "--extra-index-url", "https://a.example/simple",
         "--extra-index-url=https://tok@b.example/simple", "--find-links", "/wheels", "x==1"], {"PIP_NO_INPUT": "1"})
    assert argv == ["python", "-m", "pip", "install", "--find-links", "/wheels", "x==1"]
    assert env == {"PIP_NO_INPUT": "1", "PIP_INDEX_URL": URL,
                   "PIP_EXTRA_INDEX_URL": "https://a.example/simple https://tok@b.example/simple"}


def test_credentials_are_masked_in_text():
    assert pins.mask_url("Looking in indexes: %s, https://tok@b.example/simple" % URL) == (
        "Looking in indexes: https://builder:***@mirror.example.internal/simple, https://***@b.example/simple")


def test_a_url_that_is_no_url_is_refused_and_shown_masked():
    assert settings.problems([["url", "deps_pinning_index_url", "not a url"]]) == [
        "deps_pinning_index_url (not a url) is not an index URL: give https://host/simple (or file:///path for a "
        "local one)"]
    assert settings.problems([["url", "deps_pinning_index_url", URL], ["url", "deps_pinning_index_url", ""],
                              ["urls", "deps_pinning_extra_index_urls", ["file:///srv/simple"]]]) == []
    shown = settings.problems([["urls", "deps_pinning_extra_index_urls", ["https://u:%s@" % SECRET]]])[0]
    assert SECRET not in shown and "https://***@" in shown


def test_the_deps_module_gives_pip_the_password_only_through_its_environment(tmp_path):
    fake, log = fake_pip_python(tmp_path)
    profile = {"name": "t", "pins": {"six": "1.16.0"}, "phases": [{"name": "six", "requirements": ["six==1.16.0"]}]}
    result = run_module("pinned_venv", {"profile": profile, "python": str(fake), "state_dir": str(tmp_path / "st"),
                                         "index_url": URL, "extra_index_urls": ["https://x:%s@b.example/s" % SECRET]})
    assert result.get("failed"), result
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert calls, result
    for call in calls:  # what ps shows: the command line
        assert SECRET not in " ".join(call["argv"]) and "--index-url" not in call["argv"]
        assert call["env"]["PIP_INDEX_URL"] == URL
        assert call["env"]["PIP_EXTRA_INDEX_URL"] == "https://x:%s@b.example/s" % SECRET
    # the result (what a log or -v shows) holds neither
    assert SECRET not in json.dumps(result)
    assert os.path.isdir(tmp_path / "st")
