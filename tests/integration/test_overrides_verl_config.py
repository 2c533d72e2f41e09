"""The override engine for verl's run script validated against verl 0.5.0's real configuration (from its wheel,
downloaded from the index: network tests; merging and rendering: tests/unit/train/test_overrides.py)."""

import glob
import json
import os
import subprocess
import sys
import zipfile

import pytest
from grpo_testkit import ROOT

from ascend_grpo.train import overrides as ov

VERL_VERSION = "0.5.0"
WHEEL_CACHE = os.path.join(ROOT, ".cache", "tests", "verl-" + VERL_VERSION)


# --- validation against verl's configuration -----------------------------------------------------------------------


@pytest.fixture(scope="session")
def verl_config_dir(tmp_path_factory):
    """verl's trainer/config folder, unpacked from its wheel (downloaded once into .cache/tests/)."""
    wheels = glob.glob(os.path.join(WHEEL_CACHE, "verl-%s-*.whl" % VERL_VERSION))
    if not wheels:
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", WHEEL_CACHE,
                        "verl==" + VERL_VERSION], check=True, timeout=600)
        wheels = glob.glob(os.path.join(WHEEL_CACHE, "verl-%s-*.whl" % VERL_VERSION))
    root = tmp_path_factory.mktemp("verl")
    with zipfile.ZipFile(wheels[0]) as wheel:
        wheel.extractall(root, [name for name in wheel.namelist() if name.startswith("verl/trainer/config/")])
    return str(root / "verl" / "trainer" / "config")


@pytest.fixture(scope="session")
def base_cfg(verl_config_dir):
    cfg, errors = ov.compose(verl_config_dir, [])
    assert errors == []
    return cfg


TYPO = "data.train_batch_sise: no such key in verl's configuration; a typo? prefix with + to add a new key"
NEEDLESS_PLUS = "data.train_batch_size: already in verl's configuration; drop the +"
NOT_AN_INT = "data.train_batch_size: expects int (verl's default is 1024), got str 'abc'"


@pytest.mark.network
def test_the_wheels_config_composes_through_its_defaults_list(base_cfg):
    assert base_cfg.data.train_batch_size == 1024  # data/legacy_data.yaml
    assert base_cfg.actor_rollout_ref.actor.strategy == "fsdp"  # actor/dp_actor.yaml over actor/actor.yaml
    assert base_cfg.actor_rollout_ref.rollout.n == 1  # rollout/rollout.yaml
    assert list(base_cfg.trainer.logger) == ["console", "wandb"]


@pytest.mark.network
def test_good_overrides_compose(verl_config_dir):
    cfg, errors = ov.compose(verl_config_dir, [
        "actor_rollout_ref.rollout.n=2",
        "+actor_rollout_ref.model.override_config._attn_implementation=sdpa",
        "trainer.logger=[console,tensorboard]",
    ])
    assert errors == []
    assert cfg.actor_rollout_ref.rollout.n == 2
    assert cfg.actor_rollout_ref.model.override_config._attn_implementation == "sdpa"
    assert list(cfg.trainer.logger) == ["console", "tensorboard"]


@pytest.mark.network
def test_validate_names_the_typo_the_needless_plus_and_the_wrong_type(verl_config_dir):
    errors = ov.validate(verl_config_dir, [
        "data.train_batch_sise=4",
        "+data.train_batch_size=4",
        "data.train_batch_size=abc",
        "actor_rollout_ref.rollout.n=2",
        "+actor_rollout_ref.model.override_config._attn_implementation=sdpa",
        "trainer.logger=[console,tensorboard]",
    ])
    assert errors == [
        {"key": "data.train_batch_sise", "override": "data.train_batch_sise=4", "message": TYPO},
        {"key": "data.train_batch_size", "override": "+data.train_batch_size=4", "message": NEEDLESS_PLUS},
        {"key": "data.train_batch_size", "override": "data.train_batch_size=abc", "message": NOT_AN_INT},
    ]


@pytest.mark.network
def test_compose_reports_every_bad_override_in_order(verl_config_dir):
    cfg, errors = ov.compose(verl_config_dir, [
        "trainer.total_epochs=1",
        "data.train_batch_sise=4",
        "data.max_prompt_length=[1",
        "actor_rollout_ref.model.path=~/models/x",
        "+data.train_batch_size=4",
        "trainer.nnodes",
        "actor_rollout_ref.rollout.temprature=0.7",
        "data=nope",
        "data.train_batch_size=1,2",
    ])
    assert cfg is None
    assert [(e["key"], e["message"]) for e in errors] == [
        ("data.train_batch_sise", TYPO),
        ("data.max_prompt_length",
         "data.max_prompt_length=[1: malformed override: no viable alternative at input '[1'"),
        ("actor_rollout_ref.model.path",
         "actor_rollout_ref.model.path=~/models/x: malformed override: Hydra cannot read '~' at character 30"),
        ("data.train_batch_size", NEEDLESS_PLUS),
        ("trainer.nnodes", "trainer.nnodes: malformed override: missing EQUAL at '<EOF>'"),
        ("actor_rollout_ref.rollout.temprature",
         "actor_rollout_ref.rollout.temprature: no such key in verl's configuration; a typo? "
         "prefix with + to add a new key"),
        ("data", "data: In 'ppo_trainer': Could not find 'data/nope'; Available options in 'data': legacy_data"),
        ("data.train_batch_size",
         "data.train_batch_size: Ambiguous value for argument 'data.train_batch_size=1,2'; 1. To use it as a list, "
         "use key=[value1,value2]; 2. To use it as string, quote the value: key='value1,value2'; 3. To sweep over "
         "it, add --multirun to your command line"),
    ]


@pytest.mark.network
def test_an_override_of_a_key_added_before_it_is_fine(verl_config_dir):
    cfg, errors = ov.compose(verl_config_dir, ["+trainer.note=a", "trainer.note=b"])
    assert errors == [] and cfg.trainer.note == "b"
    _, errors = ov.compose(verl_config_dir, ["+trainer.note=a", "trainer.note=b", "trainer.nope=1"])
    assert [e["key"] for e in errors] == ["trainer.nope"]


@pytest.mark.network
def test_group_options_are_hydras_to_judge(verl_config_dir):
    cfg, errors = ov.compose(verl_config_dir, ["data=legacy_data", "actor@actor_rollout_ref.actor=dp_actor"])
    assert errors == [] and cfg.data.train_batch_size == 1024
    _, errors = ov.compose(verl_config_dir, ["rollout@actor_rollout_ref.rollout=nope"])
    assert errors == [{"key": "rollout@actor_rollout_ref.rollout", "override": "rollout@actor_rollout_ref.rollout=nope",
                       "message": "rollout@actor_rollout_ref.rollout: In 'ppo_trainer': Could not find "
                                  "'rollout/nope'; Available options in 'rollout': rollout"}]


@pytest.mark.network
def test_compose_leaves_global_hydra_as_it_found_it(verl_config_dir):
    from hydra.core.global_hydra import GlobalHydra

    ov.compose(verl_config_dir, ["data.train_batch_sise=4"])
    assert not GlobalHydra.instance().is_initialized()


@pytest.mark.network
def test_rendered_layers_reach_verls_config_unchanged(verl_config_dir):
    """What a user writes in YAML is what verl reads: strings stay strings, interpolations resolve."""
    user = {
        "data": {"train_files": ["/data/math, train.parquet", "~/data/it's.parquet"], "max_prompt_length": 1024},
        "actor_rollout_ref": {"model": {"path": "~/models/Qwen2.5-0.5B-Instruct",
                                        "override_config": {"+_attn_implementation": "sdpa"}},
                              "actor": {"optim": {"lr": 1e-6}}, "rollout": {"n": 5, "temperature": 1.0}},
        "trainer": {"experiment_name": "qwen=0.5b, run \"1\" $HOME", "project_name": "true", "logger": ["console"],
                    "val_before_train": False, "+prompt_budget": "${data.max_prompt_length}",
                    "+literal": "\\${data.max_prompt_length}"},
    }
    cfg, errors = ov.compose(verl_config_dir, ov.render_overrides(user))
    assert errors == []
    assert list(cfg.data.train_files) == ["/data/math, train.parquet", "~/data/it's.parquet"]
    assert cfg.actor_rollout_ref.model.path == "~/models/Qwen2.5-0.5B-Instruct"
    assert cfg.actor_rollout_ref.actor.optim.lr == 1e-6
    assert cfg.actor_rollout_ref.rollout.n == 5
    assert cfg.trainer.experiment_name == "qwen=0.5b, run \"1\" $HOME"
    assert cfg.trainer.project_name == "true"
    assert cfg.trainer.val_before_train is False
    assert cfg.trainer.prompt_budget == 1024
    assert cfg.trainer.literal == "${data.max_prompt_length}"


@pytest.mark.network
@pytest.mark.parametrize("override, message", [
    ("data.train_batch_size=abc", NOT_AN_INT),
    ("data.train_batch_size='5'", "data.train_batch_size: expects int (verl's default is 1024), got str '5'"),
    ("data.train_batch_size=true", "data.train_batch_size: expects int (verl's default is 1024), got bool True"),
    ("actor_rollout_ref.actor.optim.lr=fast",
     "actor_rollout_ref.actor.optim.lr: expects float (verl's default is 1e-06), got str 'fast'"),
    ("actor_rollout_ref.model.use_remove_padding=1",
     "actor_rollout_ref.model.use_remove_padding: expects bool (verl's default is False), got int 1"),
    ("trainer.project_name=5", "trainer.project_name: expects str (verl's default is 'verl_examples'), got int 5"),
    ("trainer.logger=5", "trainer.logger: expects list (verl's default is ['console', 'wandb']), got int 5"),
    ("actor_rollout_ref.model.override_config=abc",
     "actor_rollout_ref.model.override_config: expects dict (verl's default is {}), got str 'abc'"),
    ("++data.train_batch_size=abc", NOT_AN_INT),
])
def test_type_errors(base_cfg, verl_config_dir, override, message):
    errors = ov.type_errors(base_cfg, [override], ov.config_groups(verl_config_dir))
    assert errors == [{"key": message.split(":")[0], "override": override, "message": message}]


@pytest.mark.network
@pytest.mark.parametrize("override", [
    "data.train_batch_size=4",
    "actor_rollout_ref.actor.optim.lr=1",  # an int for a float
    "actor_rollout_ref.rollout.top_p=0.9",  # a float for verl's integer default of a float setting
    "actor_rollout_ref.actor.entropy_coeff=0.001",
    "trainer.logger=console",  # ALSO_ACCEPTED
    "actor_rollout_ref.model.target_modules=[q_proj,v_proj]",
    "data.train_batch_size=null",
    "data.train_batch_size=${data.max_prompt_length}",
    "actor_rollout_ref.rollout.prompt_length=abc",  # an interpolated default
    "data.val_batch_size=abc",  # a null default
    "data=legacy_data",  # a config group option
    "+trainer.extra=abc", "~trainer.nnodes", "data.train_batch_size=1,2", "data.x=[1", "trainer.nope=1",
])
def test_not_type_errors(base_cfg, verl_config_dir, override):
    assert ov.type_errors(base_cfg, [override], ov.config_groups(verl_config_dir)) == []


@pytest.mark.network
def test_the_command_line_prints_json_and_fails_on_errors(verl_config_dir, capsys):
    assert ov.main(["--config-dir", verl_config_dir, "actor_rollout_ref.rollout.n=2"]) == 0
    assert json.loads(capsys.readouterr().out) == {"ok": True, "errors": []}
    assert ov.main(["--config-dir", verl_config_dir, "data.train_batch_sise=4", "data.train_batch_size=abc"]) == 1
    assert [e["message"] for e in json.loads(capsys.readouterr().out)["errors"]] == [TYPO, NOT_AN_INT]
