"""What a job writes reaches a person only made safe: no escape sequence or control character reaches the
operator's terminal (ECMA-48: CSI ``ESC [``, OSC ``ESC ]`` up to BEL, C0 and C1 controls; tab kept), and a run
folder's or host's name cannot add a row to a table or a line to the report (escaped: ``\\n``, ``\\|``)."""

import json
import os
import sys

from grpo_testkit import ROOT

from ascend_grpo.common import jobs
from ascend_grpo.eval import result_report
from ascend_grpo.train import status_view

sys.path.insert(0, os.path.join(ROOT, "python_plugins", "callback_plugins"))
import grpo_console  # noqa: E402

HOSTILE = "step:3 \x1b[2J\x1b[H\x1b]0;pwned\x07done\rFAKE OK\x08\x9b31m \x1b[31mred\x1b[0m"
CONTROL = set(chr(c) for c in list(range(0, 9)) + list(range(10, 32)) + list(range(0x7f, 0xa0)))


def _clean(text):
    return not (set(text) & CONTROL)


def test_the_console_prints_a_jobs_progress_without_control_characters():
    line, remembered = grpo_console.retry_line("h", "Wait", {"attempts": 1, "retries": 5, "progress": HOSTILE},
                                               now=0.0)
    assert _clean(line) and _clean(remembered) and "pwned" not in line
    assert "step:3" in line and "red" in line
    line, _ = grpo_console.retry_line("h", "Wait", {"attempts": 1, "retries": 5, "failed": True, "msg": HOSTILE},
                                      now=0.0)
    assert _clean(line) and "pwned" not in line


def test_the_console_masks_a_url_password_a_job_prints():
    line, _ = grpo_console.retry_line("h", "Wait", {"progress": "GET https://u:hunter2@h/x"}, now=0.0)
    assert "hunter2" not in line and "https://u:***@h/x" in line


def test_a_jobs_tail_and_progress_carry_no_control_characters(tmp_path):
    log = tmp_path / "job.log"
    log.write_text("first\n" + HOSTILE + "\n")
    os.makedirs(tmp_path / "state" / "train")
    (tmp_path / "state" / "train" / "job.json").write_text(json.dumps({"log": str(log), "pid": 0}))
    status = jobs.status(str(tmp_path / "state"), "train")
    assert status["tail"] and all(_clean(line) for line in status["tail"])
    assert _clean(status["progress"]) and "pwned" not in status["progress"]


def _compare_row(project, experiment):
    return {"project": project, "experiment": experiment, "state": "finished", "step": 2, "total_steps": 2,
            "segments": 1}


def test_a_run_folder_named_with_a_newline_or_bar_adds_no_row_to_the_comparison():
    rows = [_compare_row("p", "real"), _compare_row("p", "evil\np  fake  finished  2/2  0.999@2"),
            _compare_row("p|x", "e\x1b[2J")]
    table = status_view.render_compare(rows).splitlines()
    assert len(table) == 2 + len(rows)  # header, rule, one line per run
    assert all(_clean(line) for line in table)
    assert any("evil\\np" in line for line in table) and any("p\\|x" in line for line in table)


def test_the_status_table_escapes_names_and_strips_a_jobs_error_line():
    rows = [{"host": "h1\nh2  running", "state": "failed", "error": HOSTILE, "why": "x\x1b[31m"}]
    text = status_view.render_table(rows)
    assert all(_clean(line) for line in text.splitlines())
    assert "h1\\nh2" in text and len([line for line in text.splitlines() if not line.startswith("    ")]) == 3


def test_the_reports_folders_cannot_add_a_table_row():
    report = {"dataset": "math", "problems": 4, "difference": 0.0, "notes": [], "settings": {}, "reference": None,
              "checkpoint": {"step": 2, "dir": "/ck/p/e\n\n| model | accuracy (%) |\n|---|---|\n| fake | 99.99 |"},
              "base": {"accuracy": 25.0, "correct": 1, "problems": 4, "model": "/m/base\n| fake2 | 1 |"},
              "trained": {"accuracy": 25.0, "correct": 1, "problems": 4, "model": "/m/merged"}}
    text = result_report.render_markdown(report, brief=True)
    rows = [line for line in text.splitlines() if line.startswith("|")]
    assert [row.split("|")[1].strip() for row in rows] == ["model", "---", "base", "trained: step 2", "difference"]


def test_the_status_of_a_failed_run_shows_its_last_lines_without_control_characters(tmp_path):
    from grpo_testkit import run_module

    state, run = tmp_path / "state", tmp_path / "run"
    (run / "logs").mkdir(parents=True)
    log = run / "logs" / "latest.log"
    log.write_text("Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n"
                   "RuntimeError: \x1b]0;pwned\x07boom \x1b[2Jhttps://u:hunter2@h/x\n" + HOSTILE + "\n")
    (state / "train").mkdir(parents=True)
    (state / "train" / "job.json").write_text(json.dumps({"log": str(log), "pid": 0}))
    (state / "train" / "exit").write_text("1\n")
    result = run_module("grpo_train_status", {"state_dir": str(state), "job": "train", "run_dir": str(run),
                                              "checkpoint_dir": str(tmp_path / "c")})
    assert result["state"] == "failed", result
    shown = [result["error"]] + list(result["traceback_tail"])
    assert all(_clean(line) and "pwned" not in line and "hunter2" not in line for line in shown), shown
