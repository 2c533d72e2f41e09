"""The override engine for verl's run script: merging layers, rendering Hydra overrides (proved with Hydra's own
parser and with bash), and validation against verl 0.5.0's real configuration (from its wheel, network tests)."""

import glob
import itertools
import json
import math
import os
import shlex
import subprocess
import sys
import zipfile

import pytest
from conftest import ROOT

from ascend_grpo import overrides as ov

VERL_VERSION = "0.5.0"
WHEEL_CACHE = os.path.join(ROOT, ".cache", "tests", "verl-" + VERL_VERSION)


# --- merge ---------------------------------------------------------------------------------------------------------


def test_later_layers_win_and_mappings_merge():
    defaults = {"data": {"train_batch_size": 1024, "max_prompt_length": 512}, "trainer": {"logger": ["console"]}}
    user = {"data": {"train_batch_size": 8}, "trainer": {"logger": ["tensorboard"]}}
    assert ov.deep_merge(defaults, user) == {
        "data": {"train_batch_size": 8, "max_prompt_length": 512},
        "trainer": {"logger": ["tensorboard"]},  # lists replace, never concatenate
    }


def test_scalars_and_mappings_replace_each_other():
    assert ov.deep_merge({"a": {"b": 1}}, {"a": 2}) == {"a": 2}
    assert ov.deep_merge({"a": 2}, {"a": {"b": 1}}) == {"a": {"b": 1}}


def test_none_removes_a_key_and_a_mapping_left_empty():
    defaults = {"actor_rollout_ref": {"model": {"override_config": {"+_attn_implementation": "sdpa"}, "path": "m"}},
                "trainer": {"nnodes": 1}}
    user = {"actor_rollout_ref": {"model": {"override_config": {"_attn_implementation": None}}}, "trainer": None}
    assert ov.deep_merge(defaults, user) == {"actor_rollout_ref": {"model": {"path": "m"}}}
    # None for a key no layer set, and None layers, are nothing to merge
    assert ov.deep_merge({"a": 1}, None, {"b": None, "c": {"d": None}}) == {"a": 1}


def test_an_empty_mapping_over_a_mapping_changes_nothing():
    assert ov.deep_merge({"a": {"b": 1}}, {"a": {}}) == {"a": {"b": 1}}
    assert ov.deep_merge({"a": 1}, {"a": {}}) == {"a": {}}  # left for flatten to refuse


def test_plus_and_bare_spellings_are_one_key():
    merged = ov.deep_merge({"first": 0, "+extra": 1, "last": 2}, {"extra": 3})
    assert merged == {"first": 0, "extra": 3, "last": 2}
    assert list(merged) == ["first", "extra", "last"]  # the later spelling, at the first position
    assert ov.deep_merge({"extra": {"a": 1}}, {"+extra": {"b": 2}}) == {"+extra": {"a": 1, "b": 2}}
    assert ov.deep_merge({"+extra": 1}, {"extra": None}) == {}


def test_merging_changes_no_layer_and_shares_nothing():
    defaults = {"a": {"b": [1, [2]]}}
    user = {"a": {"c": {"d": [3]}}}
    merged = ov.deep_merge(defaults, user)
    merged["a"]["b"][1].append(9)
    merged["a"]["c"]["d"].append(9)
    assert defaults == {"a": {"b": [1, [2]]}} and user == {"a": {"c": {"d": [3]}}}


def test_a_layer_must_be_a_mapping():
    with pytest.raises(TypeError, match="must be a mapping, not list"):
        ov.deep_merge({"a": 1}, ["a=2"])


# --- flatten -------------------------------------------------------------------------------------------------------


def test_flatten_dots_keys_in_order_and_moves_plus_to_the_front():
    nested = {"actor_rollout_ref": {"model": {"override_config": {"+_attn_implementation": "sdpa"}, "path": "m"},
                                    "+extra": {"x": 1}},
              "trainer": {"logger": ["console"], "val_before_train": False}}
    assert ov.flatten(nested) == [
        ("+actor_rollout_ref.model.override_config._attn_implementation", "sdpa"),
        ("actor_rollout_ref.model.path", "m"),
        ("+actor_rollout_ref.extra.x", 1),
        ("trainer.logger", ["console"]),
        ("trainer.val_before_train", False),
    ]


def test_flatten_refuses_an_empty_mapping_naming_its_key():
    with pytest.raises(ValueError, match=r"^actor_rollout_ref\.model\.override_config: an empty mapping is ambiguous"):
        ov.flatten({"actor_rollout_ref": {"model": {"+override_config": {}}}})


@pytest.mark.parametrize("key", ["a.b", "a b", "", "+", "é", 3])
def test_flatten_refuses_keys_hydra_cannot_address(key):
    with pytest.raises(ValueError, match=r"^trainer\..*is not a key Hydra can address"):
        ov.flatten({"trainer": {key: 1}})


# --- rendering -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value, text", [
    (True, "True"), (False, "False"), (None, "null"), (5, "5"), (-3, "-3"),
    (1e-6, "1e-06"), (0.001, "0.001"), (2.0, "2.0"), (float("inf"), "inf"),
    ("sdpa", "sdpa"), ("Qwen/Qwen2.5-0.5B-Instruct", "Qwen/Qwen2.5-0.5B-Instruct"), ("hf://a@b:c+d", "hf://a@b:c+d"),
    ("true", "'true'"), ("null", "'null'"), ("1e-6", "'1e-6'"), ("5", "'5'"), ("1_000", "'1_000'"), ("nan", "'nan'"),
    ("", "''"), ("~/models/x", "'~/models/x'"), ("a b", "'a b'"), ("a,b", "'a,b'"),
    ("it's", r"'it\'s'"), ('say "hi"', "'say \"hi\"'"),
    ("a\\b", r"'a\b'"),  # a backslash inside is itself
    ("a\\", r"'a\\'"), ("a\\'b", r"'a\\\'b'"),  # before a quote (the closing one too) it is escaped
    ("${data.max_prompt_length}", "'${data.max_prompt_length}'"),
    (["console", "tensorboard"], "[console,tensorboard]"), (["a,b", ["5", 5]], "['a,b',['5',5]]"), ([], "[]"),
    ([{"k": "v", "n": [1, None]}], "[{k:v,n:[1,null]}]"), ({}, "{}"),
])
def test_hydra_value_writes(value, text):
    assert ov.hydra_value(value) == text


@pytest.mark.parametrize("value", [{"1": 2}, {"a:b": 1}, {"true": 1}, {"a b": 1}, {3: 1}])
def test_hydra_value_refuses_dict_keys_hydra_cannot_read_back(value):
    with pytest.raises(ValueError, match="cannot be a key of a mapping"):
        ov.hydra_value([value])


@pytest.mark.parametrize("value", [(1, 2), {1, 2}, b"x", object()])
def test_hydra_value_refuses_other_types(value):
    with pytest.raises(TypeError, match="cannot write"):
        ov.hydra_value(value)


def test_render_overrides_merges_flattens_and_writes():
    defaults = {"data": {"train_batch_size": 1024}, "trainer": {"logger": ["console"], "project_name": "grpo"},
                "actor_rollout_ref": {"model": {"override_config": {"+_attn_implementation": "eager"}}}}
    user = {"data": {"train_batch_size": 8}, "trainer": {"project_name": None, "experiment_name": "run 1"},
            "actor_rollout_ref": {"model": {"override_config": {"+_attn_implementation": "sdpa"}},
                                  "actor": {"optim": {"lr": 1e-6}}}}
    assert ov.render_overrides(defaults, user) == [
        "data.train_batch_size=8",
        "trainer.logger=[console]",
        "trainer.experiment_name='run 1'",
        "+actor_rollout_ref.model.override_config._attn_implementation=sdpa",
        "actor_rollout_ref.actor.optim.lr=1e-06",
    ]


# Values with every character class that matters to Hydra's grammar or to the shell.
ROUND_TRIP = [
    "hello world", "it's", 'say "hi"', "both ' and \"", "a,b", "[x]", "{y}", "(z)", "a=b", "k=v,w=[1]",
    "$HOME", "cost: $5", "${data.max_prompt_length}", "${oc.env:HOME}/x", "\\${literal}",
    "back\\slash", "trail\\", "\\", "\\\\", "quote\\'", "\\'", "x\\\\'y", "\\\\\\",
    "é", "日本語 テスト", "line\nbreak", "tab\there", "", " ", " lead", "trail ", "#hash", "a;b&c|d", "*?", "%", "`x`",
    "true", "True", "FALSE", "null", "NULL", "1e-6", "5", "-5", "+5", "1_000", "0.5", ".5", "5.", "1.e5", "inf",
    "-inf", "NaN", "0x10", "00", "1.5.3", "~/models/x", "~", "-", "+", ":", "/abs/path", "a:b", "Qwen/Qwen2.5-7B",
    0, 1, -3, 10 ** 20, 1e-6, 0.001, 1e16, -0.5, 3.0, 1.5e300, float("inf"), float("-inf"), True, False, None,
    [], [[]], ["a,b", "c"], ["x y", ["nested", "a,b"], 1, 2.5, True, None], ["it's", '"q"', "5", "true", "\\"],
    [{"k": "v", "n": [1, "a,b"], "t": True}], {"a": 1, "b": "x y", "c": {"d": ["e"]}},
]


def same(a, b):
    """Equal, and of the same types all the way down."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return a == b


@pytest.fixture(scope="module")
def parse():
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    return lambda text: parser.parse_overrides([text])[0].value()


@pytest.mark.parametrize("value", ROUND_TRIP, ids=repr)
def test_hydra_reads_back_what_was_written(parse, value):
    written = ov.hydra_value(value)
    assert same(parse("key=" + written), value), written
    assert same(parse("+a.b=[%s]" % written), [value]), written


def test_hydra_reads_back_nan(parse):
    assert math.isnan(parse("key=" + ov.hydra_value(float("nan"))))


def test_hydra_reads_back_short_strings(parse):
    """Every string of up to three characters that can look like a number, bool or null, bare or quoted."""
    alphabet = "01e._-+naf:/@"
    words = ["".join(chars) for size in (1, 2, 3) for chars in itertools.product(alphabet, repeat=size)]
    words += [sign + word for sign in ("", "+", "-") for word in ("inf", "INF", "nan", "NaN", "true", "TRUE", "null",
                                                                     "1_0", "1_0.5_5", "1e1_0", "0.5e-3", "true_x")]
    wrong = [(word, ov.hydra_value(word)) for word in words if parse("k=" + ov.hydra_value(word)) != word]
    assert not wrong


def test_rendered_overrides_parse_as_the_layers_say(parse):
    from hydra.core.override_parser.overrides_parser import OverridesParser

    layer = {"trainer": {"experiment_name": "it's run #1, v2 (final)", "+tags": ["a,b", "c d"], "nnodes": 1},
             "actor_rollout_ref": {"model": {"path": "~/models/Qwen2.5-0.5B", "override_config": {"+x": {"y": 1.5}}}}}
    parsed = OverridesParser.create().parse_overrides(ov.render_overrides(layer))
    assert [(o.key_or_group, o.is_add(), o.value()) for o in parsed] == [
        ("trainer.experiment_name", False, "it's run #1, v2 (final)"),
        ("trainer.tags", True, ["a,b", "c d"]),
        ("trainer.nnodes", False, 1),
        ("actor_rollout_ref.model.path", False, "~/models/Qwen2.5-0.5B"),
        ("actor_rollout_ref.model.override_config.x.y", True, 1.5),
    ]


# --- shell ---------------------------------------------------------------------------------------------------------


def shell_overrides():
    return ["key=" + ov.hydra_value(v) for v in ROUND_TRIP if not isinstance(v, (int, float)) or isinstance(v, bool)]


def test_shell_words_split_back_into_the_overrides():
    assert shlex.split(" ".join(ov.shell_lines(shell_overrides()))) == shell_overrides()


def test_bash_passes_each_override_through_unchanged():
    """As the run script does: one override per line, continued with backslashes."""
    script = "printf '%s\\0' \\\n  " + " \\\n  ".join(ov.shell_lines(shell_overrides())) + "\n"
    out = subprocess.run(["bash", "-c", script], capture_output=True, check=True, timeout=60).stdout
    assert out.decode("utf-8").split("\0")[:-1] == shell_overrides()


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
