"""The controller's speed callbacks (issue 45, a converged demo in 30 s): grpo_preload loads the filters once before
the workers fork; grpo_module_cache keeps the modules' payloads across runs in a private folder, keyed by what they
are built from, and its pruning never touches anything but its own fingerprint folders."""

import importlib.util
import os
import subprocess
import sys

import pytest
from grpo_testkit import ROOT

CALLBACKS = os.path.join(ROOT, "python_plugins", "callback_plugins")


def _load(name):
    spec = importlib.util.spec_from_file_location("grpo_cb_" + name, os.path.join(CALLBACKS, name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def cache():
    return _load("grpo_module_cache")


def _home(tmp_path):
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    return home


def test_only_the_newest_fingerprint_folders_are_kept_and_nothing_else_is_touched(tmp_path, cache):
    root = tmp_path / "root"
    root.mkdir()
    others = {".git": "dir", "roles": "dir", "tests": "dir", "README.md": "file", "f" * 32 + "x": "dir",
              "A" * 32: "dir", "b" * 32: "file"}
    for name, kind in others.items():
        (root / name).mkdir() if kind == "dir" else (root / name).write_text("keep me")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "precious").write_text("mine")
    (root / ("c" * 32)).symlink_to(elsewhere)  # a link with a fingerprint's name: not a folder of the cache's
    for age, digit in enumerate("0123456"):
        folder = root / (digit * 32)
        folder.mkdir()
        (folder / "payload").write_text("x")
        os.utime(folder, ns=(10**18 + age * 10**9, 10**18 + age * 10**9))
    removed = cache.prune(str(root), keep=3, current="1" * 32)
    assert sorted(removed) == ["0" * 32, "2" * 32, "3" * 32]
    left = set(os.listdir(root))
    assert left == set(others) | {"c" * 32, "1" * 32, "4" * 32, "5" * 32, "6" * 32}
    assert (elsewhere / "precious").read_text() == "mine"
    assert (root / "README.md").read_text() == "keep me"
    # a folder another checkout's playbook started with an hour ago stays, past the three newest: it may be in use
    (root / ("7" * 32)).mkdir()
    for digit in "89a":
        (root / (digit * 32)).mkdir()
    os.utime(root / ("7" * 32), (os.path.getmtime(root / ("8" * 32)) - 3600,) * 2)
    assert sorted(cache.prune(str(root), keep=3, current="8" * 32)) == ["1" * 32, "4" * 32, "5" * 32, "6" * 32]
    assert (root / ("7" * 32)).is_dir()


@pytest.mark.parametrize("home", ["", "relative/home", "."])
def test_an_empty_or_relative_home_turns_the_cache_off_and_makes_nothing(tmp_path, cache, home, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cache.cache_root(home) is None
    assert os.listdir(tmp_path) == []


def test_the_cache_folder_must_be_private_and_the_users(tmp_path, cache):
    home = _home(tmp_path)
    assert cache.cache_root(str(home)) == str(home / cache.FOLDER)
    assert oct((home / cache.FOLDER).stat().st_mode & 0o777) == "0o700"
    (home / cache.FOLDER).chmod(0o777)  # someone else could plant a payload: off
    assert cache.cache_root(str(home)) is None
    (home / cache.FOLDER).chmod(0o700)
    assert cache.cache_root(str(home), uid=os.geteuid() + 1) is None  # another user's home: off
    open_home = tmp_path / "open"
    open_home.mkdir()
    open_home.chmod(0o777)
    assert cache.cache_root(str(open_home)) is None and not (open_home / cache.FOLDER).exists()
    linked = tmp_path / "linked"
    linked.symlink_to(home)
    assert cache.cache_root(str(linked)) is None


def test_the_fingerprint_follows_every_module_and_module_utils_file(tmp_path, cache):
    modules, utils = tmp_path / "modules", tmp_path / "module_utils"
    (utils / "pkg").mkdir(parents=True)
    modules.mkdir()
    (modules / "m.py").write_text("a = 1\n")
    (utils / "pkg" / "e.py").write_text("b = 1\n")
    first = cache.fingerprint([str(modules)], [str(utils)], [])
    assert len(first) == 32 and first == cache.fingerprint([str(modules)], [str(utils)], [])
    (utils / "pkg" / "e.py").write_text("b = 22\n")
    second = cache.fingerprint([str(modules)], [str(utils)], [])
    assert second != first
    (modules / "n.py").write_text("c = 1\n")
    assert cache.fingerprint([str(modules)], [str(utils)], []) not in (first, second)


def test_the_run_links_its_cache_and_can_be_turned_off(tmp_path, cache):
    home, run = _home(tmp_path), tmp_path / "run"
    run.mkdir()
    assert cache.link_cache(str(run), str(home), env={"GRPO_MODULE_CACHE": "off"}) is None
    assert not (run / "ansiballz_cache").exists() and not (home / cache.FOLDER).exists()
    folder = cache.link_cache(str(run), str(home), env={})
    assert os.readlink(run / "ansiballz_cache") == folder and os.path.dirname(folder) == str(home / cache.FOLDER)
    assert cache.link_cache(str(run), str(home), env={}) is None  # Ansible's own cache is there: left as it is


def test_a_second_run_takes_the_payloads_the_first_built_and_does_the_same(tmp_path):
    """Two real runs with an empty ANSIBLE_HOME: the first fills the cache, the second finds it; the folder the run
    started in holds nothing afterwards (no cache, no link), and the run's own temporary folder is gone."""
    home, work = _home(tmp_path), tmp_path / "work"
    work.mkdir()
    play = tmp_path / "play.yml"
    play.write_text("- hosts: localhost\n  gather_facts: false\n  tasks:\n"
                    "    - grpo_files:\n        dirs: ['%s']\n" % (tmp_path / "made"))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_HOME=str(home),
               ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"), ANSIBLE_ROLES_PATH=os.path.join(ROOT, "roles"),
               ANSIBLE_LIBRARY=os.path.join(ROOT, "python_plugins", "modules"),
               ANSIBLE_MODULE_UTILS=os.path.join(ROOT, "python_plugins", "module_utils"))
    argv = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,", "-c", "local",
            "-e", "ansible_python_interpreter=" + sys.executable, str(play)]
    runs = [subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, check=False) for _ in range(2)]
    assert all(run.returncode == 0 for run in runs), runs[-1].stdout + runs[-1].stderr
    (folder,) = os.listdir(home / "grpo_module_cache")
    assert any(name.startswith("ansible.legacy.grpo_files-") and not name.endswith(".lock")
               for name in os.listdir(home / "grpo_module_cache" / folder))
    assert os.listdir(work) == [] and os.listdir(tmp_path / "tmp") == []
    assert (tmp_path / "made").is_dir()


def test_preload_loads_every_filter_before_the_first_task(tmp_path):
    """grpo_preload's play-start hook leaves the filter loader with this package's filters loaded (what the workers
    then inherit)."""
    code = ("import os\nfrom ansible.plugins.loader import init_plugin_loader, filter_loader\n"
            "init_plugin_loader()\nimport importlib.util as u\n"
            "s = u.spec_from_file_location('p', os.path.join(%r, 'grpo_preload.py'))\n"
            "m = u.module_from_spec(s); s.loader.exec_module(m)\n"
            "m.CallbackModule().v2_playbook_on_play_start(None)\n"
            "print(sorted(n for n in filter_loader._cached_non_collection_wrappers if n == 'settings_problems'))\n"
            % CALLBACKS)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False,
                         env=dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg")))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("['settings_problems']"), out.stdout
