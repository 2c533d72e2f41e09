"""MATH preprocessing: the last \\boxed{} as ground truth, verl's schema, math.json, reruns, bad input; local and hub."""

import json
import os
import shutil

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sim_assets
from ascend_grpo.assets import math_data
from fakehub import FakeHub


@pytest.mark.parametrize("text, expected", [
    ("so $x = \\boxed{4}$.", "4"),
    ("\\boxed{\\frac{1}{4}}", "\\frac{1}{4}"),
    ("\\boxed{\\frac{1}{2^{3}}}", "\\frac{1}{2^{3}}"),
    ("first \\boxed{x=2}, then \\boxed{\\dfrac{\\sqrt{3}}{2}} at last", "\\dfrac{\\sqrt{3}}{2}"),
    ("\\boxed{(2, -1)}", "(2, -1)"),
    ("\\boxed{\\{1, 2\\}}", "\\{1, 2\\}"),  # escaped braces do not nest
    ("\\fbox{7}", "7"),
    ("the answer is $\\boxed 5$.", "5"),
    ("\\boxed{\\left[ -2, 3 \\right)}", "\\left[ -2, 3 \\right)"),
    ("no box here", None),
    ("\\boxed{unclosed {brace}", None),
    ("", None),
    (None, None),
])
def test_last_boxed(text, expected):
    assert math_data.last_boxed(text) == expected


def test_every_fixture_problem_has_a_ground_truth():
    for problem in sim_assets.load_problems():
        truth = math_data.last_boxed(problem["solution"])
        assert truth and truth.count("{") == truth.count("}"), problem["problem"]


def test_verl_row_schema():
    record = {"problem": "What is $1+1$?", "level": "Level 1", "type": "Prealgebra",
              "solution": "$1+1=\\boxed{2}$"}
    assert math_data.verl_row(record, "train", 3) == {
        "problem": "What is $1+1$?", "level": "Level 1", "type": "Prealgebra", "solution": "$1+1=\\boxed{2}$",
        "data_source": "DigitalLearningGmbH/MATH-lighteval",
        "prompt": [{"role": "user", "content": "What is $1+1$? Let's think step by step and output the final "
                                               "answer within \\boxed{}."}],
        "ability": "math", "reward_model": {"style": "rule", "ground_truth": "2"},
        "extra_info": {"split": "train", "index": 3}}


def test_opencompass_keys_count_per_type():
    records = [{"problem": str(i), "level": "Level 1", "type": t, "solution": "\\boxed{%d}" % i}
               for i, t in enumerate(["Algebra", "Geometry", "Algebra"])]
    assert list(math_data.opencompass_json(records)) == ["Algebra_0", "Geometry_0", "Algebra_1"]


@pytest.fixture(scope="module")
def math_src(tmp_path_factory):
    return sim_assets.build_math_parquet(tmp_path_factory.mktemp("src"))


def _local(tmp_path, src):
    return {"source": "local", "dest": str(tmp_path / "out"), "local_dir": str(src),
            "cache_dir": str(tmp_path / "cache")}


def test_local_build_then_current(tmp_path, math_src):
    spec = _local(tmp_path, math_src)
    step = math_data.plan(spec)
    assert step["action"] == "build"
    result = math_data.build(spec, step)
    assert result["rows"] == {"train": 24, "test": 8} and result["dropped"] == {"train": 0, "test": 0}
    train = pd.read_parquet(tmp_path / "out" / "train.parquet")
    assert list(train.columns) == ["problem", "level", "type", "solution", "data_source", "prompt", "ability",
                                   "reward_model", "extra_info"]
    problems = [p for p in sim_assets.load_problems() if p["split"] == "train"]
    assert [r["ground_truth"] for r in train["reward_model"]] == [
        math_data.last_boxed(p["solution"]) for p in problems]
    assert [e["index"] for e in train["extra_info"]] == list(range(24))
    math_json = json.loads((tmp_path / "out" / "math.json").read_text())
    assert len(math_json) == 8 and all(set(v) == {"problem", "level", "type", "solution"}
                                       for v in math_json.values())
    again = math_data.plan(spec)
    assert again["action"] == "none" and again["rows"] == {"train": 24, "test": 8}


def test_changed_input_or_option_rebuilds(tmp_path, math_src):
    src = tmp_path / "src"
    shutil.copytree(math_src, src)
    spec = _local(tmp_path, src)
    math_data.build(spec, math_data.plan(spec))
    assert math_data.plan(dict(spec, instruction="Answer in \\boxed{}."))["action"] == "build"
    table = pq.read_table(src / "data" / "test-00000-of-00001.parquet").slice(0, 5)
    pq.write_table(table, src / "data" / "test-00000-of-00001.parquet")
    step = math_data.plan(spec)
    assert step["action"] == "build" and step["reason"] == "outputs out of date"
    assert math_data.build(spec, step)["rows"] == {"train": 24, "test": 5}


def test_an_edited_output_is_kept_aside(tmp_path, math_src):
    spec = _local(tmp_path, math_src)
    math_data.build(spec, math_data.plan(spec))
    edited = tmp_path / "out" / "math.json"
    edited.write_text('{"mine": {}}')
    step = math_data.plan(spec)
    assert step["action"] == "build"
    result = math_data.build(spec, step)
    assert len(result["backups"]) == 1 and open(result["backups"][0]).read() == '{"mine": {}}'


def test_missing_column_fails_before_writing(tmp_path):
    src = tmp_path / "src" / "data"
    src.mkdir(parents=True)
    for split in ("train", "test"):
        pq.write_table(pa.table({"problem": ["p"], "solution": ["\\boxed{1}"], "level": ["Level 1"]}),
                       src / ("%s-00000-of-00001.parquet" % split))
    spec = _local(tmp_path, src.parent)
    with pytest.raises(math_data.DataError, match="lacks column\\(s\\) type") as err:
        math_data.build(spec, math_data.plan(spec))
    assert err.value.field == "local_dir" and not (tmp_path / "out" / "train.parquet").exists()


def test_missing_split_files(tmp_path):
    (tmp_path / "src").mkdir()
    pq.write_table(pa.table({"problem": ["p"]}), tmp_path / "src" / "train.parquet")
    with pytest.raises(math_data.DataError, match="no test\\*.parquet under"):
        math_data.plan(_local(tmp_path, tmp_path / "src"))
    with pytest.raises(math_data.DataError, match="is not a folder"):
        math_data.plan(_local(tmp_path, tmp_path / "nowhere"))


def test_rows_without_a_box_are_dropped_and_counted(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for split in ("train", "test"):
        pq.write_table(pa.table({"problem": ["a", "b"], "level": ["Level 1"] * 2, "type": ["Algebra"] * 2,
                                 "solution": ["\\boxed{1}", "no answer"]}), src / ("%s.parquet" % split))
    spec = _local(tmp_path, src)
    assert math_data.build(spec, math_data.plan(spec))["dropped"] == {"train": 1, "test": 1}


@pytest.fixture()
def hub(tmp_path, math_src, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    root = tmp_path / "hub"
    shutil.copytree(math_src, root / "datasets" / math_data.DATA_SOURCE)
    with FakeHub(str(root)) as server:
        yield server


def test_hub_build_through_datasets_then_offline_rerun(tmp_path, hub):
    spec = {"source": "hf", "dest": str(tmp_path / "out"), "repo": math_data.DATA_SOURCE, "revision": "main",
            "endpoint": hub.url, "cache_dir": str(tmp_path / "cache")}
    step = math_data.plan(spec)
    assert step["action"] == "build" and len(step["input"]) == 40
    assert math_data.build(spec, step)["rows"] == {"train": 24, "test": 8}
    # datasets resolved the files through the hub's API (their bytes may come from huggingface_hub's cache)
    assert any("/tree/%s" % step["input"] in p for _m, p in hub.requests)
    # current: decided from the manifest alone, the hub is not asked
    offline = dict(spec, endpoint="http://127.0.0.1:9")
    assert math_data.plan(offline)["action"] == "none"


@pytest.mark.parametrize("change, field", [({"repo": "Nobody/none"}, "repo"), ({"revision": "v2"}, "revision"),
                                           ({"endpoint": "http://127.0.0.1:9"}, "endpoint")])
def test_bad_hub_input(tmp_path, hub, change, field):
    spec = dict({"source": "hf", "dest": str(tmp_path / "out"), "repo": math_data.DATA_SOURCE,
                 "revision": "main", "endpoint": hub.url}, **change)
    with pytest.raises(math_data.DataError) as err:
        math_data.plan(spec)
    assert err.value.field == field and not os.path.exists(tmp_path / "out")
