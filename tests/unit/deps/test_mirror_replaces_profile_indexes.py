"""A site's mirror replaces the profiles' own index URLs (issue 46, item 3): docs/deps.md and grpo_index_url's
documentation promise it, and a site that reaches only its mirror would otherwise wait out time-outs on
download.pytorch.org at every lookup. The shipped vllm0.13.0 profile adds that index to two phases
(roles/deps_pinning/files/profiles/vllm0.13.0.yml: ``extra_index_urls: [https://download.pytorch.org/whl/cpu]``).

pip's options as pip documents them: ``--index-url`` replaces PyPI, ``--extra-index-url`` adds an index,
``--find-links`` a folder or page of files, ``--trusted-host`` a host without a valid certificate."""

import os

import yaml
from grpo_testkit import FIXTURES, ROOT

from ascend_grpo.deps import pins

ROLE = os.path.join(ROOT, "roles", "deps_pinning", "files")
PATHS = {"files": os.path.join(ROLE, "requirements"), "verl": os.path.join(FIXTURES, "verl_634bd935")}
PYTORCH = "https://download.pytorch.org/whl/cpu"  # as the profile file writes it
MIRROR = "https://mirror.example.internal/simple"


def shipped(name="vllm0.13.0"):
    with open(os.path.join(ROLE, "profiles", name + ".yml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def read(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def every_pip_argv(site):
    """The plan's index options and every install step's command line for the shipped profile."""
    profile = shipped()
    request = pins.plan_request(profile, PATHS, read, "aarch64", site)
    steps = pins.install_steps(profile, PATHS, read, "aarch64", site, "python3", "/ws/.grpo/constraints.txt")
    return request["index_args"], [step["argv"] for step in steps]


def test_the_shipped_profile_asks_pytorchs_index_without_a_mirror():
    index_args, argvs = every_pip_argv({})
    assert index_args == ["--extra-index-url", PYTORCH]
    core = [argv for argv in argvs if "torch==2.8.0" in argv][0]
    assert core[core.index("--extra-index-url") + 1] == PYTORCH


def test_a_site_mirror_replaces_the_profiles_indexes():
    site = {"index_url": MIRROR, "find_links": ["/srv/wheels"], "trusted_hosts": ["mirror.example.internal"]}
    index_args, argvs = every_pip_argv(site)
    assert index_args == ["--index-url", MIRROR, "--find-links", "/srv/wheels",
                          "--trusted-host", "mirror.example.internal"]
    for argv in argvs:
        assert not any("download.pytorch.org" in word for word in argv), argv
        if argv[3] == "install":
            assert argv[argv.index("--index-url") + 1] == MIRROR


def test_a_site_that_mirrors_pytorchs_index_too_lists_it_among_its_extra_urls():
    mirrored = "https://mirror.example.internal/pytorch-cpu"
    index_args, argvs = every_pip_argv({"index_url": MIRROR, "extra_index_urls": [mirrored]})
    assert index_args == ["--index-url", MIRROR, "--extra-index-url", mirrored]
    assert not any("download.pytorch.org" in word for argv in argvs for word in argv)


def test_extra_indexes_alone_are_added_to_the_profiles():
    # no mirror: the site's extra indexes join the profile's, which still serve what PyPI lacks
    index_args, _ = every_pip_argv({"extra_index_urls": ["https://extra.example/simple"]})
    assert index_args == ["--extra-index-url", "https://extra.example/simple", "--extra-index-url", PYTORCH]


def test_ignore_profile_indexes_still_drops_them_without_a_mirror():
    index_args, argvs = every_pip_argv({"ignore_profile_indexes": True})
    assert index_args == []
    assert not any("download.pytorch.org" in word for argv in argvs for word in argv)


def test_a_per_architecture_index_of_a_profile_gives_way_to_the_mirror_too():
    phase = {"name": "p", "requirements": ["x==1"], "index_url": {"aarch64": "https://own/a"},
             "extra_index_urls": {"aarch64": ["https://own/extra"]}, "find_links": ["/own/links"]}
    assert pins.index_args(phase, "aarch64", {}) == [
        "--index-url", "https://own/a", "--extra-index-url", "https://own/extra", "--find-links", "/own/links"]
    # the profile's find-links folders are files, not an index: they stay
    assert pins.index_args(phase, "aarch64", {"index_url": MIRROR}) == [
        "--index-url", MIRROR, "--find-links", "/own/links"]
