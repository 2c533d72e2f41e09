"""The verl_patch module's engine, in-process: the branches its module tests do not reach (a missing file of the
profile, check mode writing nothing, the report lines by profile)."""

import pytest

from ascend_grpo.patch import profile_apply


def verl_tree(tmp_path, text):
    (tmp_path / "verl").mkdir()
    (tmp_path / "verl" / "__init__.py").write_text("")
    (tmp_path / "verl" / "rollout.py").write_text(text)
    return {"root": str(tmp_path), "state_dir": "", "inventory": "", "enable_optional": False}


RENAME = {"op": "rename", "file": "verl/rollout.py", "symbol": "CompilationLevel", "to": "CompilationMode",
          "profile": "vllm0.13.0"}


def test_check_mode_reports_the_rename_and_writes_nothing(tmp_path):
    original = "from vllm.config import CompilationLevel\n"
    p = dict(verl_tree(tmp_path, original), operations=[RENAME])
    found = profile_apply.apply(p, check_mode=True)
    assert found["changed"] is True and found["root"] == str(tmp_path)
    assert (tmp_path / "verl" / "rollout.py").read_text() == original
    assert [f["file"] for f in found["files"]] == ["verl/rollout.py"]
    assert found["lines"][0].startswith("vllm0.13.0 | verl/rollout.py: ")
    assert "+from vllm.config import CompilationMode" in found["diff"][0]["prepared"]


def test_a_file_of_the_profile_that_is_missing_changes_nothing_and_lists_the_problem(tmp_path):
    p = dict(verl_tree(tmp_path, "x = 1\n"), operations=[dict(RENAME, file="verl/gone.py")])
    with pytest.raises(profile_apply.PatchRefused) as err:
        profile_apply.apply(p, check_mode=False)
    assert err.value.result["problems"] and "verl/gone.py" in err.value.msg
    assert (tmp_path / "verl" / "rollout.py").read_text() == "x = 1\n"


def test_no_verl_tree_is_one_problem_naming_the_folder(tmp_path):
    with pytest.raises(profile_apply.PatchRefused) as err:
        profile_apply.verl_root({"root": str(tmp_path), "state_dir": "", "inventory": ""})
    assert err.value.result == {"problems": ["no verl tree at %s" % tmp_path]}
