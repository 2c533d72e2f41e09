"""The grpo_bundle module's engine, in-process: the branches its module tests do not reach (pip freeze failing,
a secret file that is empty or absent) with a stand-in run_command."""

import tarfile

from ascend_grpo.bundle import support_bundle


def args(tmp_path, **extra):
    p = {"dest": str(tmp_path / "b.tar.gz"), "workspace": str(tmp_path / "ws"), "run_dir": str(tmp_path / "run"),
         "python": "/venv/bin/python", "plog_dir": str(tmp_path / "plog"), "log_lines": 400, "texts": {},
         "secrets": [], "secret_files": []}
    p.update(extra)
    return p


def test_a_failed_pip_freeze_is_kept_as_its_status_and_error():
    asked = []

    def run_command(argv):
        asked.append(argv)
        return 1, "", "No module named pip"
    members = support_bundle.collect(run_command, {"texts": {"a.txt": "x"}, "python": "/venv/bin/python",
                                                   "run_dir": "/nonexistent/run", "workspace": "/nonexistent/ws",
                                                   "plog_dir": "/nonexistent/plog", "log_lines": 10})
    assert asked == [["/venv/bin/python", "-m", "pip", "freeze", "--all"]]
    assert members == {"a.txt": "x", "pip-freeze.txt": "pip freeze failed (1): No module named pip"}


def test_a_secret_files_text_is_taken_out_and_an_empty_or_absent_one_is_ignored(tmp_path):
    (tmp_path / "token").write_text("  s3cr3t-ray-token\n")
    (tmp_path / "empty").write_text("   \n")
    p = args(tmp_path, texts={"env.txt": "RAY_TOKEN_COPY s3cr3t-ray-token here"},
             secret_files=[str(tmp_path / "token"), str(tmp_path / "empty"), str(tmp_path / "absent")])
    done = support_bundle.make(p, False, lambda argv: (0, "pip==24.0\n", ""))
    assert done["changed"] is True and done["path"] == p["dest"]
    with tarfile.open(p["dest"]) as tar:
        text = tar.extractfile("env.txt").read().decode()
    assert "s3cr3t-ray-token" not in text and "***" in text


def test_check_mode_names_the_members_without_writing(tmp_path):
    done = support_bundle.make(args(tmp_path, texts={"x.txt": "1"}), True, lambda argv: (0, "", ""))
    assert done == {"changed": True, "path": str(tmp_path / "b.tar.gz"), "members": ["pip-freeze.txt", "x.txt"],
                    "redacted": 0}
    assert not (tmp_path / "b.tar.gz").exists()
