"""The verl_import_check module's engine, in-process: the branches its module tests do not reach (check mode
keeps no answer, no tree and no record, the default package folders)."""

import os

import pytest

from ascend_grpo.patch import import_verdict


def tree_and_site(tmp_path, line):
    tree, site = tmp_path / "tree", tmp_path / "site"
    (tree / "verl").mkdir(parents=True)
    (tree / "verl" / "__init__.py").write_text(line)
    (site / "vllm").mkdir(parents=True)
    (site / "vllm" / "__init__.py").write_text("")
    return {"root": str(tree), "state_dir": str(tmp_path / ".grpo"), "paths": [str(site)], "watched": ["vllm"],
            "entries": ["verl"], "optional": [], "enable_optional": False, "inventory": ""}


def test_check_mode_answers_but_keeps_no_answer(tmp_path):
    p = tree_and_site(tmp_path, "import vllm\n")
    found = import_verdict.verdict(dict(p), check_mode=True)
    assert found["blocking"] == [] and found["cached"] is False and found["changed"] is False
    assert not os.path.exists(tmp_path / ".grpo" / "compat-check.json")
    import_verdict.verdict(dict(p), check_mode=False)
    assert import_verdict.verdict(dict(p), check_mode=True)["cached"] is True


def test_a_blocking_import_fails_with_the_whole_answer(tmp_path):
    p = tree_and_site(tmp_path, "from vllm.gone import thing\n")
    with pytest.raises(import_verdict.ImportsBlocked) as err:
        import_verdict.verdict(p, check_mode=False)
    assert err.value.msg.startswith("verl imports what the installed stack does not have, on the path training "
                                    "takes:\n") and "vllm.gone" in err.value.msg
    assert err.value.result["blocking"] and err.value.result["reached"] == ["verl"]


def test_no_tree_and_no_record_names_the_setting(tmp_path):
    p = dict(tree_and_site(tmp_path, ""), root="")
    with pytest.raises(import_verdict.ImportsBlocked) as err:
        import_verdict.verdict(p, check_mode=False)
    assert err.value.msg.endswith("Or set {root} to the folder that holds verl/.")
    assert err.value.result == {}


def test_without_paths_this_pythons_package_folders_are_searched():
    paths = import_verdict.site_paths()
    assert paths and all(x.endswith(("site-packages", "dist-packages")) for x in paths)
    assert any(os.path.isdir(os.path.join(x, "pytest")) for x in paths)  # where this Python found pytest
