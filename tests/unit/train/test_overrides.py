"""The override engine for verl's run script: merging layers, rendering Hydra overrides (proved with Hydra's own
parser and with bash); the validation against verl 0.5.0's real configuration (from its wheel, network tests) is
tests/integration/test_overrides_verl_config.py."""

import itertools
import math
import shlex
import subprocess

import pytest

from ascend_grpo.train import overrides as ov


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
