"""The support bundle: what it holds, and none of the secrets planted in the workspace, the run, the log, the plog,
the records and the container's settings."""

import json
import os
import stat
import sys
import tarfile

import pytest
from grpo_testkit import run_module

from ascend_grpo.bundle import support_bundle

HUB = "hf_PlantedHubToken0123456789"
REGISTRY = "Planted-Registry-Pass!42"
RAY = "planted-ray-token-3f9c2e7a"
INDEX = "pl4nted1ndexpass"
MARKED = "planted-marked-env-value"  # a value the user marked secret (grpo_bundle_secret_env)
NAMED = "planted-named-api-key"  # a value whose variable's name says secret
PLANTED = (HUB, REGISTRY, RAY, INDEX, MARKED, NAMED)


@pytest.mark.parametrize("text, secrets, expect", [
    ("pip install -i https://me:%s@mirror.example/simple x" % INDEX, [], "https://***@mirror.example/simple"),
    ("export HF_TOKEN='%s'" % HUB, [], "export HF_TOKEN='***'"),
    ('"registry_password": "%s"' % REGISTRY, [], '"registry_password": "***"'),
    ("MY_API_KEY=%s more" % NAMED, [], "MY_API_KEY=*** more"),
    ("token %s and %s" % (RAY, RAY), [RAY], "token *** and ***"),
    ("export OTHER=%s" % MARKED, [MARKED], "export OTHER=***"),
])
def test_redact_takes_out_secrets_credentials_and_secret_named_values(text, secrets, expect):
    out, count = support_bundle.redact(text, support_bundle.secrets_of(secrets))
    assert expect in out and count >= 1
    assert all(p not in out for p in PLANTED)


def test_names_that_only_hold_a_secret_word_keep_their_values():
    text = "max_num_batched_tokens: 512\nRAY_AUTH_TOKEN_PATH=/data/grpo/.grpo/ray/auth_token\nray_cluster_auth: token\n"
    assert support_bundle.redact(text, []) == (text, 0)


def test_short_and_empty_values_are_no_secrets():
    assert support_bundle.secrets_of(["", "ab", None, {"a": ["long-enough", " "]}, "long-enough"]) == ["long-enough"]
    assert support_bundle.redact("an ordinary log line", []) == ("an ordinary log line", 0)


def test_the_bundle_holds_what_maintainers_ask_for_and_none_of_the_planted_secrets(tmp_path):
    ws, run = tmp_path / "ws", tmp_path / "ws" / "runs" / "p" / "e"
    (run / "logs").mkdir(parents=True)
    (ws / ".grpo" / "jobs").mkdir(parents=True)
    (ws / ".grpo" / "ray").mkdir()
    (ws / ".grpo" / "ray" / "auth_token").write_text(RAY + "\n")
    (run / "run_grpo.sh").write_text("export HF_TOKEN=%s\nexport OTHER=%s\nexport MY_API_KEY=%s\n"
                                     "python3 -m verl.trainer.main_ppo data.train_batch_size=4\n"
                                     % (HUB, MARKED, NAMED))
    (run / ".launch.json").write_text(json.dumps({"script_sha1": "3f2a", "pid": 42}))
    (run / "logs" / "latest.log").write_text("config: {'trainer': {'total_epochs': 1}}\n" + "step:%d - x\n" * 0 +
                                             "".join("step:%d - score:0.1\n" % i for i in range(1, 600)) +
                                             "connecting with token %s\nray token %s\n" % (HUB, RAY))
    (ws / ".grpo" / "deps.json").write_text(json.dumps({"index_url": "https://me:%s@mirror.example/simple" % INDEX}))
    (ws / ".grpo" / "jobs" / "train.json").write_text(json.dumps({"pid": 42, "exit_status": 1}))
    # the doctor's result, as grpo_doctor keeps it
    (ws / ".grpo" / "doctor.json").write_text(json.dumps({"passed": False, "rows": [
        {"check": "free HBM", "status": "fail", "detail": "card 0: 1000 MB free of 65536", "fix": "free the card"}]}))
    plog = tmp_path / "plog" / "debug" / "plog"
    plog.mkdir(parents=True)
    (plog / "plog-42_1.log").write_text("[ERROR] HCCL ... registry %s\n" % REGISTRY)
    container = {"Config": {"Env": ["REGISTRY_PASSWORD=%s" % REGISTRY, "PATH=/usr/bin"]}}
    dest = tmp_path / "out" / "bundle.tar.gz"
    result = run_module("grpo_bundle", {
        "dest": str(dest), "workspace": str(ws), "run_dir": str(run), "python": sys.executable,
        "plog_dir": str(tmp_path / "plog"), "log_lines": 50,
        "texts": {"npu-smi-info.txt": "+---| npu-smi 23.0.6 Version: 23.0.6 |", "container.json": json.dumps(container)},
        "secrets": [HUB, REGISTRY, MARKED], "secret_files": [str(ws / ".grpo" / "ray" / "auth_token"),
                                                           str(tmp_path / "none")]})
    assert result["changed"] and result["path"] == str(dest)
    assert stat.S_IMODE(os.stat(dest).st_mode) == 0o600
    assert result["members"] == ["container.json", "npu-smi-info.txt", "pip-freeze.txt", "plog/plog-42_1.log.tail",
                                 "records/deps.json", "records/doctor.json", "records/jobs/train.json",
                                 "run/latest.log.head",
                                 "run/latest.log.tail", "run/launch.json", "run/run_grpo.sh"]
    with tarfile.open(dest) as archive:
        texts = {m.name: archive.extractfile(m).read().decode() for m in archive.getmembers()}
        assert all(m.uid == 0 and m.mode == 0o644 for m in archive.getmembers())
    assert sorted(texts) == result["members"]
    for name, text in texts.items():
        assert [p for p in PLANTED if p in text] == [], name
    # each planted value once where it appears: HUB twice (script, log), REGISTRY twice (plog, container), MARKED,
    # NAMED, RAY, INDEX once; a value taken out by value is not counted again as a secret-named assignment
    assert result["redacted"] >= 8
    assert "pytest==" in texts["pip-freeze.txt"]  # this Python's own packages
    assert texts["run/latest.log.head"].startswith("config: {'trainer'")
    assert len(texts["run/latest.log.tail"].split("\n")) <= 51 and "step:599 - score:0.1" in texts["run/latest.log.tail"]
    assert "export HF_TOKEN=***" in texts["run/run_grpo.sh"] and "data.train_batch_size=4" in texts["run/run_grpo.sh"]
    assert "https://***@mirror.example/simple" in texts["records/deps.json"]
    assert "REGISTRY_PASSWORD=***" in texts["container.json"]
    assert json.loads(texts["records/doctor.json"])["rows"][0]["check"] == "free HBM"


def test_check_mode_lists_the_members_and_writes_nothing(tmp_path):
    (tmp_path / "run").mkdir()
    result = run_module("grpo_bundle", {"dest": str(tmp_path / "b.tar.gz"), "workspace": str(tmp_path),
                                        "run_dir": str(tmp_path / "run"), "python": sys.executable}, check=True)
    assert result["members"] == ["pip-freeze.txt"] and not (tmp_path / "b.tar.gz").exists()


def test_the_bundle_holds_the_runs_spec_with_its_secrets_taken_out(tmp_path):
    """issue 45: what the run is (its spec, written by the train stage's check) goes to the maintainers, redacted as
    every other record."""
    from ascend_grpo.train import run_spec

    ws, run = tmp_path / "ws", tmp_path / "ws" / "runs" / "p" / "e"
    run.mkdir(parents=True)
    url = "https://me:%s@mirror.example/models" % INDEX
    spec = run_spec.build({"data": {"train_batch_size": 4}, "actor_rollout_ref": {"model": {"path": url}}},
                          ["data.train_batch_size=4", "actor_rollout_ref.model.path=%s" % url],
                          {"data.train_batch_size": 4, "actor_rollout_ref.model.path": url})
    run_spec.write(str(ws / ".grpo"), spec)
    dest = tmp_path / "out" / "bundle.tar.gz"
    result = run_module("grpo_bundle", {"dest": str(dest), "workspace": str(ws), "run_dir": str(run),
                                        "python": sys.executable})
    assert "records/run-spec.json" in result["members"]
    with tarfile.open(dest) as archive:
        text = archive.extractfile("records/run-spec.json").read().decode()
    assert INDEX not in text and "https://***@mirror.example/models" in text
    assert json.loads(text)["summary"]["data.train_batch_size"] == 4
