"""The eval stage's engines behind its modules, called in this process: the merge's refusals and what they carry
(grpo_checkpoint over checkpoint_merge), and the kept score's checks (grpo_eval_result over result_store)."""

import os

import pytest

from ascend_grpo.eval import checkpoint_merge, result_store


def _checkpoint(root):
    actor = root / "ck" / "global_step_2" / "actor"
    (actor / "huggingface").mkdir(parents=True)
    (actor / "model_world_size_1_rank_0.pt").write_text("weights 2")
    (actor.parent / "data.pt").write_text("dataloader 2")
    (actor / "huggingface" / "config.json").write_text("{}")
    (root / "ck" / "latest_checkpointed_iteration.txt").write_text("2")
    return dict(checkpoint_dir=str(root / "ck"), step=0, target_root=str(root / "merged"), python="python3",
                launches=None, inventory="", trust_remote_code=False)


def test_a_merger_that_writes_no_weights_is_refused_and_its_partial_folder_removed(tmp_path):
    params = _checkpoint(tmp_path)
    calls = []

    def run_command(argv, cwd=None):
        calls.append((argv, cwd))
        os.makedirs(argv[argv.index("--target_dir") + 1])  # exits 0 having written nothing
        return 0, "", ""

    with pytest.raises(checkpoint_merge.EvalError) as err:
        checkpoint_merge.merge_checkpoint(params, False, run_command)
    assert "verl's model merger wrote no safetensors or config.json for step 2" in str(err.value)
    assert err.value.result["changed"] is True and err.value.result["step"] == 2
    target = err.value.result["target"]
    assert not os.path.exists(target + ".partial") and not os.path.exists(target)
    argv, cwd = calls[0]
    assert argv[:4] == ["python3", "-m", "verl.model_merger", "merge"] and "--trust-remote-code" not in argv
    assert cwd == os.path.dirname(target)


def test_check_mode_runs_no_merger_and_says_what_would_change(tmp_path):
    params = _checkpoint(tmp_path)
    result = checkpoint_merge.merge_checkpoint(params, True, lambda *a, **k: pytest.fail("ran in check mode"))
    assert result["changed"] is True and result["diff"]["before"] == "(absent)\n"
    assert result["diff"]["after"] == "merged from step 2 of %s\n" % params["checkpoint_dir"]
    assert "backup" not in result and "source_fingerprint" not in result


def test_info_hides_the_private_parts_of_the_plan(tmp_path):
    result = checkpoint_merge.checkpoint_info(_checkpoint(tmp_path))
    assert result["changed"] is False and result["step"] == 2
    assert "backup" not in result and "source_fingerprint" not in result


def test_chat_template_jinja_wins_over_the_tokenizer_config(tmp_path):
    # transformers reads chat_template.jinja before tokenizer_config.json's chat_template
    assert checkpoint_merge.chat_template_of(str(tmp_path)) is None
    (tmp_path / "tokenizer_config.json").write_text('{"chat_template": "{{ in config }}"}')
    assert checkpoint_merge.chat_template_of(str(tmp_path)) == "{{ in config }}"
    (tmp_path / "chat_template.jinja").write_text("{{ in file }}")
    assert checkpoint_merge.chat_template_of(str(tmp_path)) == "{{ in file }}"


def _scored(tmp_path, name="trained"):
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    data = tmp_path / "test.parquet"
    data.write_text("problems")
    return dict(name=name, model_dir=str(model), model="m", data_file=str(data), settings={"n": 1},
                eval_dir=str(tmp_path / "eval"), dataset="math", state="collected", report_name=None, reports=None,
                report_dir=None, inventory="", trust_remote_code=False)


def test_a_missing_base_model_names_the_setting_to_point_elsewhere(tmp_path):
    params = _scored(tmp_path, name="base")
    params["model_dir"] = str(tmp_path / "absent")
    with pytest.raises(result_store.EvalError) as err:
        result_store.eval_result(params, False)
    assert "the base model's model folder" in str(err.value) and "run the assets stage" in str(err.value)
    assert "or set {model_dir} to a Hugging Face model folder" in str(err.value)


@pytest.mark.parametrize("read, words", [
    (dict(problems=0, correct=0, accuracy=0.0, summary_accuracy=None), "OpenCompass scored no problem in"),
    (dict(problems=4, correct=2, accuracy=50.0, summary_accuracy=25.0), "OpenCompass's summary says 25.00"),
    (dict(problems=4, correct=1, accuracy=50.0, summary_accuracy=None), "does not match its details (1 of 4"),
])
def test_a_score_that_does_not_add_up_is_refused_and_nothing_kept(tmp_path, monkeypatch, read, words):
    params = _scored(tmp_path)
    monkeypatch.setattr(result_store.result_report, "read_result",
                        lambda work_dir, dataset: dict(read, result_file="r.json", run="20260101_000000"))
    with pytest.raises(result_store.EvalError) as err:
        result_store.eval_result(params, False)
    assert words in str(err.value)
    assert err.value.result["found"] is False and not os.path.exists(err.value.result["kept"])


def test_a_score_that_adds_up_is_kept_but_not_in_check_mode(tmp_path, monkeypatch):
    params = _scored(tmp_path)
    monkeypatch.setattr(result_store.result_report, "read_result",
                        lambda work_dir, dataset: dict(problems=4, correct=2, accuracy=50.0, summary_accuracy=50.0,
                                                       result_file="r.json", run="20260101_000000"))
    checked = result_store.eval_result(params, True)
    assert checked["changed"] is True and not os.path.exists(checked["kept"])
    kept = result_store.eval_result(params, False)
    assert os.path.isfile(kept["kept"]) and kept["result"]["evaluated_at"] == "20260101_000000"
    params["state"] = "query"
    assert result_store.eval_result(params, False)["found"] is True


def test_reports_in_check_mode_write_nothing(tmp_path):
    params = dict(state="reported", report_dir=None, eval_dir=str(tmp_path), report_name="r",
                  reports={"md": "# report", "json": "{}\n"})
    result = result_store.write_reports(params, True)
    assert result["changed"] is True and result["paths"]["md"] == str(tmp_path / "reports" / "r.md")
    assert not os.path.exists(tmp_path / "reports")
    assert result_store.eval_result(params, False)["changed"] is True
    assert (tmp_path / "reports" / "r.md").read_text() == "# report\n"


def test_the_controllers_report_is_written_only_where_its_text_differs(tmp_path):
    """The eval stage reads the controller's copy of the report before calling there (a converged rerun calls
    nothing): a file holding its text as the writer writes it (a newline added) counts as written; a missing, edited
    or linked one does not."""
    from ascend_grpo.eval import result_store
    import eval_filters

    texts = {"md": "# report", "json": "{}\n"}
    assert result_store.reports_to_write(str(tmp_path), "r", texts) == ["json", "md"]
    result_store.write_reports(dict(report_dir=str(tmp_path), eval_dir="", report_name="r", reports=texts), False)
    assert result_store.reports_to_write(str(tmp_path), "r", texts) == []
    assert eval_filters.eval_reports_to_write(texts, tmp_path, "r") == []
    (tmp_path / "r.md").write_text("# report\nedited\n")
    assert result_store.reports_to_write(str(tmp_path), "r", texts) == ["md"]
    (tmp_path / "r.md").unlink()
    (tmp_path / "elsewhere.md").write_text("# report\n")
    (tmp_path / "r.md").symlink_to(tmp_path / "elsewhere.md")
    assert result_store.reports_to_write(str(tmp_path), "r", texts) == ["md"]
