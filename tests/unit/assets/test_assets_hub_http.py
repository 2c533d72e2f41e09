"""The assets stage's hub and mirror endpoints are https unless assets_hub_allow_http accepts plain http: anyone
on the path of an http mirror can change the model it serves (a config.json with an auto_map, the code it names)."""

import os
import re

import pytest
import yaml

from ascend_grpo.common import settings
from grpo_testkit import ROOT


def _assets_preflight_problems(**over):
    """The assets stage's first preflight task's problem list, rendered as Ansible would with the role's defaults and
    ``over`` (the user's settings)."""
    import common_filters  # here, not at collection: it imports Ansible, which patches sys.intern before torch
    import jinja2.nativetypes

    with open(os.path.join(ROOT, "roles", "assets", "tasks", "preflight.yml"), encoding="utf-8") as handle:
        first = [task for task in yaml.safe_load(handle) if task["name"].startswith("Preflight | Check every setting")][0]
    with open(os.path.join(ROOT, "roles", "assets", "defaults", "main.yml"), encoding="utf-8") as handle:
        defaults = yaml.safe_load(handle)
    env = jinja2.nativetypes.NativeEnvironment(undefined=jinja2.StrictUndefined)
    env.filters.update(setting_problems=settings.problems, basename=os.path.basename,
                       bool=lambda v: v is True or str(v).lower() in ("true", "yes", "on", "1"),
                       from_yaml=yaml.safe_load, settings_problems=common_filters.settings_problems,
                       declared_settings_pattern=common_filters.declared_settings_pattern,
                       zip=lambda a, b: list(zip(a, b)))
    # grpo_common's values the defaults name (no offline bundle)
    context = dict(grpo_workspace="/data/grpo", grpo_common_python="/usr/bin/python3",
                   role_path=os.path.join(ROOT, "roles", "assets"), grpo_offline_bundle="",
                   grpo_common_bundle_mount="/grpo-bundle", grpo_common_bundle_meta={})
    context.update(defaults, **over)
    for _ in range(3):  # defaults that name other defaults
        context = {k: env.from_string(v).render(context) if isinstance(v, str) and "{{" in v else v
                   for k, v in context.items()}

    def lookup(plugin, *terms):  # the three lookups the task uses, as Ansible answers them
        assert plugin == "ansible.builtin.file", plugin
        with open(terms[0], encoding="utf-8") as handle:
            return handle.read()

    def query(plugin, *terms):
        if plugin == "ansible.builtin.varnames":
            return [name for name in context if re.match(terms[0], name)]
        assert plugin == "ansible.builtin.vars", plugin
        return [context[name] for name in terms]

    env.globals.update(lookup=lookup, query=query)
    assert first["name"].startswith("Preflight | Check every setting")
    for name, template in first["vars"].items():  # in the order the task gives them; the last is the problems
        context[name] = env.from_string(template).render(context)
    return context["_assets_problems"]


def test_the_assets_preflight_refuses_an_http_hub_naming_both_settings():
    assert _assets_preflight_problems() == []
    problems = _assets_preflight_problems(assets_hub_endpoint="http://user:pa55@mirror.example/hf")
    assert len(problems) == 1, problems
    assert "assets_hub_endpoint" in problems[0] and "assets_hub_allow_http: true" in problems[0], problems
    assert "pa55" not in problems[0] and "http://***@mirror.example/hf" in problems[0], problems


@pytest.mark.parametrize("over", [{"assets_hub_endpoint": "https://hf-mirror.com"},
                                  {"assets_hub_endpoint": "http://mirror.example", "assets_hub_allow_http": True},
                                  {"assets_hub_endpoint": "HTTP://mirror.example", "assets_hub_allow_http": "true"}])
def test_an_https_hub_or_an_accepted_http_one_passes(over):
    assert _assets_preflight_problems(**over) == []


def test_the_hub_check_refuses_plain_http_unless_allowed():
    refused = settings.problems([["hub?", "assets_hub_endpoint", "HTTP://mirror.example", False,
                                  "assets_hub_allow_http"]])
    assert len(refused) == 1 and "plain http" in refused[0] and "assets_hub_allow_http" in refused[0]
    assert settings.problems([["hub?", "assets_hub_endpoint", "http://mirror.example", True,
                               "assets_hub_allow_http"]]) == []
    assert settings.problems([["hub?", "assets_hub_endpoint", "", False, "assets_hub_allow_http"]]) == []
    assert "is not a URL" in settings.problems([["hub", "assets_hub_endpoint", "mirror.example"]])[0]
