"""No credential on a command line, in a result or in a world-readable record: a ``--find-links`` location and
verl's git repository with a password reach pip and git through their environment (``ps`` shows every user of the
host each process's arguments), and the verl source stamp that names such a URL is its owner's only.

pip reads PIP_FIND_LINKS (whitespace-separated) as it reads --find-links, and adds the command line's to it (pip's
user guide, "Environment Variables"; optparse's append action). git asks a credential helper for the password of
an https URL (``git help credentials``) and takes configuration from GIT_CONFIG_COUNT/KEY/VALUE (git-config(1)).
"""

import json
import os
import stat

from grpo_testkit import fake_pip_python, run_module
from grpo_testkit.setting_names import role_setting_names

from ascend_grpo.deps import pins, verl_checkout

SECRET = "s3/cr3t@pw"
LINKS = "https://builder:%s@wheels.example.internal/links/" % SECRET
REPO = "https://builder:%s@git.example.internal/verl.git" % SECRET
COMMIT = "a" * 40


def test_a_find_links_location_with_a_password_moves_to_pips_environment():
    argv, env = pins.index_env(["python", "-m", "pip", "install", "--find-links", LINKS, "--find-links", "/wheels",
                                "--find-links=https://h/l?sig=abc", "x==1"], {"PIP_NO_INPUT": "1"})
    assert argv == ["python", "-m", "pip", "install", "--find-links", "/wheels", "x==1"]
    assert env == {"PIP_NO_INPUT": "1", "PIP_FIND_LINKS": "%s https://h/l?sig=abc" % LINKS}


def test_the_deps_module_gives_pip_find_links_with_a_password_only_through_its_environment(tmp_path):
    fake, log = fake_pip_python(tmp_path)
    profile = {"name": "t", "pins": {"six": "1.16.0"}, "phases": [{"name": "six", "requirements": ["six==1.16.0"]}]}
    result = run_module("pinned_venv", {"profile": profile, "python": str(fake), "state_dir": str(tmp_path / "st"),
                                         "site": {"find_links": [LINKS]}})
    assert result.get("failed"), result
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert calls, result
    for call in calls:
        assert SECRET not in " ".join(call["argv"]), call["argv"]
        assert LINKS in call["env"]["PIP_FIND_LINKS"].split()
    assert SECRET not in json.dumps(result)


def _recording_run(calls, tree_for_clone=None):
    def run(argv, env=None):
        calls.append({"argv": list(argv), "env": dict(env or {})})
        if argv[:2] == ["git", "clone"] and tree_for_clone is not None:
            os.makedirs(os.path.join(argv[-1], "verl"))
            with open(os.path.join(argv[-1], "verl", "__init__.py"), "w") as handle:
                handle.write("")
        if "rev-parse" in argv:
            return (0, COMMIT + "\n", "") if os.path.isdir(argv[argv.index("-C") + 1]) else (128, "", "no tree")
        return 0, "", ""
    return run


def test_git_gets_the_repositorys_password_through_its_environment_only(tmp_path):
    calls = []
    assert verl_checkout.git_clone(_recording_run(calls), REPO, str(tmp_path / "dest"), COMMIT) is None
    git_calls = [c for c in calls if "clone" in c["argv"] or "fetch" in c["argv"]]
    assert git_calls
    for call in git_calls:
        assert SECRET not in " ".join(call["argv"]), call["argv"]
        assert "https://git.example.internal/verl.git" in call["argv"]
        assert call["env"]["GRPO_GIT_PASSWORD"] == SECRET


def test_the_stamp_naming_a_url_with_a_password_is_0600_and_the_result_masks_it(tmp_path):
    ws = tmp_path / "ws"
    (ws / ".grpo").mkdir(parents=True)
    calls = []
    step = verl_checkout.SourceStep({"kind": "git", "repo": REPO, "commit": COMMIT}, str(ws / "verl"),
                                    str(ws / ".grpo"), _recording_run(calls, tree_for_clone=True))
    result = step.converge()
    stamp = ws / ".grpo" / verl_checkout.STAMP
    assert json.loads(stamp.read_text())["repo"] == REPO  # the stamp compares what was asked for
    assert stat.S_IMODE(os.stat(stamp).st_mode) == 0o600
    assert SECRET not in json.dumps(result) and "builder:***@git.example.internal" in json.dumps(result)


def test_a_refusal_names_the_repository_masked(tmp_path):
    ws = tmp_path / "ws"
    (ws / ".grpo").mkdir(parents=True)
    result = run_module("verl_source", {"source": {"kind": "git", "repo": "https://builder:%s@127.0.0.1:9/verl.git"
                                                   % SECRET, "commit": COMMIT},
                                        "dest": str(ws / "verl"), "state_dir": str(ws / ".grpo"),
                                        "setting_names": role_setting_names("deps_pinning", "verl_source")})
    assert result.get("failed"), result
    assert "deps_pinning_verl_repo" in result["msg"] and "https://builder:***@127.0.0.1:9/verl.git" in result["msg"]
    assert SECRET not in json.dumps(result)


def test_a_stage_record_naming_a_url_with_a_password_is_0600_and_others_stay_0644(tmp_path):
    from ascend_grpo.common import workspace

    workspace.write_record(str(tmp_path), "deps", {"verl_dir": "/data/grpo/verl",
                                                   "source": {"kind": "git", "repo": REPO, "commit": COMMIT}})
    workspace.write_record(str(tmp_path), "train", {"run_dir": "/data/grpo/runs/p/e"})
    assert stat.S_IMODE(os.stat(workspace.record_path(str(tmp_path), "deps")).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(workspace.record_path(str(tmp_path), "train")).st_mode) == 0o644


def test_the_tarball_proof_names_its_url_masked(tmp_path):
    result = run_module("verl_tarball", {"path": str(tmp_path / "missing.tar.gz"), "commit": COMMIT,
                                         "origin": "https://u:%s@dl.example.internal/verl.tgz" % SECRET})
    assert result.get("failed"), result
    assert SECRET not in json.dumps(result)


def test_the_weights_plan_shows_the_endpoint_masked(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "model.safetensors").write_text("x")
    (model / "tokenizer.json").write_text("{}")
    result = run_module("model_weights", {"source": "local", "local_dir": str(model), "dest": str(tmp_path / "d"),
                                          "endpoint": "https://u:%s@hub.example.internal" % SECRET})
    assert SECRET not in json.dumps(result), result


def _task(path, name):
    import yaml
    from grpo_testkit import ROOT

    def walk(tasks):
        for task in tasks or []:
            if task.get("name") == name and "block" not in task:
                return task
            found = walk(task.get("block")) or walk(task.get("rescue"))
            if found:
                return found
        return None
    with open(os.path.join(ROOT, path), encoding="utf-8") as handle:
        return walk(yaml.safe_load(handle))


def _render(expression, **values):
    import jinja2

    import common_filters
    import deps_filters

    env = jinja2.Environment()
    env.filters.update(common_filters.FilterModule().filters())
    env.filters.update(deps_filters.FilterModule().filters())
    return env.from_string(expression).render(**values).strip()


def test_tasks_that_hold_a_url_with_a_password_are_not_shown_and_files_are_0600():
    """The tasks that carry a repository, tarball, find-links or hub URL as it is (facts, a download, the weights
    plan) turn no_log on, and the plan's mode to 0600, exactly when one holds a credential."""
    facts = _task("roles/deps_pinning/tasks/preflight.yml", "Preflight | Collect the site's index settings")
    plain = dict(deps_pinning_verl_repo="https://github.com/volcengine/verl.git", deps_pinning_verl_tarball="",
                 deps_pinning_find_links=["/wheels"])
    assert _render(facts["no_log"], **plain) == "False"
    assert _render(facts["no_log"], **dict(plain, deps_pinning_verl_repo=REPO)) == "True"
    assert _render(facts["no_log"], **dict(plain, deps_pinning_find_links=["/wheels", LINKS])) == "True"
    download = _task("roles/deps_pinning/tasks/tarball.yml", "Tarball | Download the tarball")
    assert _render(download["no_log"], deps_pinning_verl_tarball="https://h/v.tgz?X-Amz-Signature=ab12") == "True"
    assert _render(download["no_log"], deps_pinning_verl_tarball="https://h/v.tgz") == "False"
    plan = _task("roles/assets/tasks/fetch.yml", "Weights | Write the plan")
    endpoint = "https://u:%s@hub.example.internal" % SECRET
    assert _render(plan["ansible.builtin.copy"]["mode"], assets_hub_endpoint=endpoint) == "0600"
    assert _render(plan["ansible.builtin.copy"]["mode"], assets_hub_endpoint="https://hf-mirror.com") == "0644"
    assert _render(plan["no_log"], assets_hub_endpoint=endpoint) == "True"
