"""The site's proxy (grpo_proxy) as environment variables, checked before use (issue 46, item 3).

What the variables are: pip, requests and huggingface_hub read HTTP_PROXY, HTTPS_PROXY and NO_PROXY in either case
(Python's urllib.request.getproxies_environment), git's curl reads ``http_proxy`` in lower case only and
HTTPS_PROXY in either (curl's manual, "ENVIRONMENT"), so both cases are set. NO_PROXY is a comma-separated list of
hosts, domains (a leading '.') and, for curl 7.86 and later and requests, address blocks (CIDR)."""

import os

import pytest
import yaml
from grpo_testkit import ROOT

from ascend_grpo.common import proxy, settings

SECRET = "pr0xy-s3cret"
URL = "http://builder:%s@proxy.example.internal:3128" % SECRET


def common_spec():
    with open(os.path.join(ROOT, "roles", "grpo_common", "meta", "argument_specs.yml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def test_a_proxy_becomes_its_variables_in_both_cases():
    env = proxy.proxy_env({"http_proxy": URL, "https_proxy": URL, "no_proxy": "localhost, 127.0.0.1,.example.com"})
    assert env == {"HTTP_PROXY": URL, "http_proxy": URL, "HTTPS_PROXY": URL, "https_proxy": URL,
                   "NO_PROXY": "localhost,127.0.0.1,.example.com", "no_proxy": "localhost,127.0.0.1,.example.com"}
    assert proxy.proxy_env({"https_proxy": "socks5://10.0.0.1:1080"}) == {
        "HTTPS_PROXY": "socks5://10.0.0.1:1080", "https_proxy": "socks5://10.0.0.1:1080"}


@pytest.mark.parametrize("none", [{}, None, {"http_proxy": "", "no_proxy": ""}])
def test_no_proxy_is_no_variable(none):
    assert proxy.proxy_env(none) == {}


@pytest.mark.parametrize("value, says", [
    ({"https_proxy": "proxy.example.com:3128"}, "grpo_proxy.https_proxy (proxy.example.com:3128) is not a proxy URL"),
    ({"https_proxy": "ftp://proxy.example.com"}, "is not a proxy URL: give the proxy's URL with its scheme"),
    ({"http_proxy": "http://"}, "grpo_proxy.http_proxy (http://) is not a proxy URL"),
    ({"http_proxy": "http://proxy.example.com:3128\n"}, "without spaces or control characters"),
    ({"http_proxy": "http://proxy example.com"}, "without spaces or control characters"),
    ({"https-proxy": "http://p:3128"}, "grpo_proxy: 'https-proxy' is not a key of it: use http_proxy, https_proxy"),
    ({"no_proxy": "localhost;.example.com"}, "grpo_proxy.no_proxy: 'localhost;.example.com' is no host"),
    ({"no_proxy": "localhost\n"}, "grpo_proxy.no_proxy ('localhost\\n') must be one line"),
    ("http://proxy.example.com:3128", "grpo_proxy is a mapping with the keys http_proxy, https_proxy, no_proxy"),
])
def test_a_bad_proxy_is_refused_naming_the_setting_and_the_fix(value, says):
    problems = proxy.proxy_problems("grpo_proxy", value)
    assert len(problems) == 1 and says in problems[0], problems


def test_a_refusal_never_shows_the_password():
    problems = proxy.proxy_problems("grpo_proxy", {"https_proxy": URL.replace("http://", "gopher://")})
    assert problems and SECRET not in problems[0] and "gopher://***@proxy.example.internal" in problems[0]


def test_the_shared_settings_check_covers_grpo_proxy():
    spec = common_spec()
    assert settings.check_settings(spec, {"grpo_proxy": {"https_proxy": URL, "no_proxy": "10.0.0.0/8"}}) == []
    found = settings.check_settings(spec, {"grpo_proxy": {"https_proxy": "proxy:3128"}})
    assert [p["field"] for p in found] == ["grpo_proxy"] and "grpo_proxy.https_proxy" in found[0]["message"]
    assert settings.check_settings(spec, {"grpo_proxy": {}}) == []
    # its default is none
    with open(os.path.join(ROOT, "roles", "grpo_common", "defaults", "main.yml"), encoding="utf-8") as handle:
        assert yaml.safe_load(handle)["grpo_proxy"] == {}


def test_an_engine_refuses_a_bad_proxy_on_its_option():
    with pytest.raises(proxy.ProxyError) as err:
        proxy.proxy_env({"https_proxy": "proxy:3128"})
    assert err.value.field == "proxy" and err.value.msg.startswith("{proxy}.https_proxy (proxy:3128)")


def test_the_variables_are_set_for_a_call_and_restored_after():
    environ = {"HTTPS_PROXY": "http://before:1", "PATH": "/bin"}
    with proxy.proxy_environ({"https_proxy": URL, "http_proxy": URL}, environ) as env:
        assert environ["HTTPS_PROXY"] == environ["https_proxy"] == environ["HTTP_PROXY"] == URL
        assert env["http_proxy"] == URL
    assert environ == {"HTTPS_PROXY": "http://before:1", "PATH": "/bin"}
    with pytest.raises(RuntimeError):
        with proxy.proxy_environ({"https_proxy": URL}, environ):
            raise RuntimeError("the call failed")
    assert environ == {"HTTPS_PROXY": "http://before:1", "PATH": "/bin"}
    with proxy.proxy_environ({}, environ):
        assert environ == {"HTTPS_PROXY": "http://before:1", "PATH": "/bin"}


def test_a_run_callable_passes_the_variables_on_and_its_own_win():
    calls = []

    def run(argv, environ_update=None, timeout=None):
        calls.append((argv, environ_update, timeout))
        return 0, "", ""

    through = proxy.through(run, proxy.proxy_env({"https_proxy": URL}))
    through(["git", "fetch"], environ_update={"GIT_TERMINAL_PROMPT": "0", "https_proxy": "http://own:1"}, timeout=5)
    through(["pip", "download"])
    assert calls == [(["git", "fetch"], {"HTTPS_PROXY": URL, "https_proxy": "http://own:1",
                                         "GIT_TERMINAL_PROMPT": "0"}, 5),
                     (["pip", "download"], {"HTTPS_PROXY": URL, "https_proxy": URL}, None)]
    assert proxy.through(run, {}) is run


def test_the_passwords_are_what_a_module_hides():
    assert proxy.hidden_values({"https_proxy": URL, "no_proxy": "localhost"}) == [SECRET]
    assert proxy.hidden_values(None) == []
