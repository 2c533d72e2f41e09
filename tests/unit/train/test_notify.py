"""The run's notifications (ascend_grpo.train.notify): the vendors' body shapes, the format's choice, the URL kept
secret, the retries, the messages, and the rendered run script sending exactly one message to a real listener on
127.0.0.1 when it finishes, fails or its lease nears its end."""

import http.server
import importlib
import io
import json
import os
import shlex
import shutil
import sys
import threading
import time
import urllib.error

import jinja2
import pytest
import yaml
from grpo_testkit import ROOT

from ascend_grpo.common import jobs, secrets, settings
from ascend_grpo.train import notify

FIXTURES = os.path.join(ROOT, "tests", "fixtures", "verl_logs")
MODULE_UTILS = os.path.join(ROOT, "python_plugins", "module_utils")
# the vendors' URL shapes (their webhook docs); the token parts are made up
SLACK = "https://hooks.slack.com/services/T0000/B0000/XXXXXXXXXXXXXXXXXXXXXXXX"
FEISHU = "https://open.feishu.cn/open-apis/bot/v2/hook/00000000-1111-2222-3333-444444444444"
LARK = "https://open.larksuite.com/open-apis/bot/v2/hook/00000000-1111-2222-3333-444444444444"
DINGTALK = "https://oapi.dingtalk.com/robot/send?access_token=abcdef0123456789"


# --- the shapes, transcribed from the vendors' documentation, not from our output ---

def test_slack_body_is_the_incoming_webhooks_text():
    # api.slack.com/messaging/webhooks: POST {"text": "Hello, world."}
    assert notify.payload("slack", "Hello, world.") == {"text": "Hello, world."}


def test_feishu_body_is_the_custom_bots_text_message():
    # open.feishu.cn/document/client-docs/bot-v3/add-custom-bot: {"msg_type":"text","content":{"text":"..."}}
    assert notify.payload("feishu", "request example") == {"msg_type": "text", "content": {"text": "request example"}}


def test_dingtalk_body_is_the_custom_robots_text_type():
    # open.dingtalk.com custom robot, text: {"msgtype":"text","text":{"content":"..."}}
    assert notify.payload("dingtalk", "hi") == {"msgtype": "text", "text": {"content": "hi"}}


def test_plain_json_carries_the_facts_and_the_text():
    body = notify.payload("json", "t", {"event": "ended", "status": "failed", "triage": {"id": "x"}})
    assert body == {"event": "ended", "status": "failed", "triage": {"id": "x"}, "text": "t"}


@pytest.mark.parametrize("url, fmt", [(SLACK, "slack"), (FEISHU, "feishu"), (LARK, "feishu"), (DINGTALK, "dingtalk"),
                                      ("https://alerts.example.com/hook", "json"), ("http://127.0.0.1:9/x", "json"),
                                      ("https://hooks.slack.com.evil.example/x", "json")])
def test_auto_picks_by_the_urls_host(url, fmt):
    assert notify.choose_format("auto", url) == fmt
    assert notify.choose_format("dingtalk", url) == "dingtalk"  # a format set wins


# --- the URL is a secret ---

@pytest.mark.parametrize("url", [SLACK, FEISHU, DINGTALK])
def test_the_url_shows_as_its_host_only(url):
    shown = secrets.mask_endpoint(url)
    assert shown.endswith("/***") and "XXXX" not in shown and "4444" not in shown and "abcdef" not in shown
    assert secrets.scrub("posting to %s: refused" % url, url) == "posting to %s: refused" % shown


def test_the_setting_is_checked_as_a_webhook_without_showing_it():
    assert settings.problems([["webhook?", "grpo_train_notify_url", ""]]) == []
    assert settings.problems([["webhook?", "grpo_train_notify_url", SLACK]]) == []
    for bad in ("hooks.slack.com/services/T0/B0/SECRETPART", "ftp://h/SECRETPART", "https://h/SECRET PART",
                "https://h/SECRETPART\n"):
        problems = settings.problems([["webhook?", "grpo_train_notify_url", bad]])
        assert len(problems) == 1 and problems[0].startswith("grpo_train_notify_url is not a webhook URL")
        assert "SECRET" not in problems[0]


class _Answer(io.BytesIO):
    status = 200

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class _Opener:
    """Answers each call with the next of ``answers`` (an exception to raise, or a body)."""

    def __init__(self, *answers):
        self.answers, self.calls = list(answers), []

    def open(self, request, timeout):
        self.calls.append((request.full_url, json.loads(request.data), timeout))
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return _Answer(answer)


def test_a_network_error_is_retried_then_delivered():
    opener, slept = _Opener(urllib.error.URLError("timed out"), b'{"code":0,"msg":"success"}'), []
    ok, what = notify.send(FEISHU, {"x": 1}, opener=opener, sleep=slept.append)
    assert ok and what == "delivered to https://open.feishu.cn/*** (HTTP 200)"
    assert len(opener.calls) == 2 and slept == [2] and opener.calls[0][2] == notify.TIMEOUT_S


def test_it_gives_up_after_three_tries_and_never_shows_the_url():
    error = urllib.error.URLError("cannot reach %s" % SLACK)
    opener = _Opener(error, error, error)
    ok, what = notify.send(SLACK, {"text": "x"}, opener=opener, sleep=lambda s: None)
    assert not ok and len(opener.calls) == 3 and "after 3 attempts" in what
    assert "XXXX" not in what and "https://hooks.slack.com/***" in what


def test_a_client_error_is_not_retried():
    opener = _Opener(urllib.error.HTTPError(SLACK, 404, "Not Found", {}, None))
    ok, what = notify.send(SLACK, {"text": "x"}, opener=opener, sleep=lambda s: None)
    assert not ok and len(opener.calls) == 1 and "HTTP 404" in what and "XXXX" not in what


def test_a_bots_refusal_in_an_http_200_is_not_delivered():
    # DingTalk answers {"errcode":310000,"errmsg":"keywords not in content"} with HTTP 200
    opener = _Opener(b'{"errcode":310000,"errmsg":"keywords not in content"}')
    ok, what = notify.send(DINGTALK, {"msgtype": "text"}, opener=opener, sleep=lambda s: None)
    assert not ok and "errcode 310000" in what and "abcdef" not in what


# --- the messages ---

def _run(tmp_path, log, saved_steps=()):
    run_dir, ckpt = tmp_path / "runs" / "p" / "e", tmp_path / "checkpoints"
    (run_dir / "logs").mkdir(parents=True)
    shutil.copy(os.path.join(FIXTURES, log), run_dir / "logs" / "grpo-20261203-131450.log")
    (run_dir / "logs" / "latest.log").symlink_to("grpo-20261203-131450.log")
    ckpt.mkdir()
    for step in saved_steps:  # a whole save as verl writes it: the actor's shard, data.pt, then the record
        folder = ckpt / ("global_step_%d" % step) / "actor"
        folder.mkdir(parents=True)
        (folder / "model_world_size_1_rank_0.pt").write_text("x")
        (folder.parent / "data.pt").write_text("x")
        (ckpt / "latest_checkpointed_iteration.txt").write_text(str(step))
    with open(os.path.join(ROOT, "roles", "grpo_train", "files", "triage.yml"), encoding="utf-8") as handle:
        catalogue = yaml.safe_load(handle)
    return {"format": "json", "lease_lead_s": 1800, "host": "npu-a", "workspace": str(tmp_path), "run": "p/e",
            "run_dir": str(run_dir), "checkpoint_dir": str(ckpt), "records_dir": str(tmp_path / ".grpo"),
            "inventory": "-i inventories/sim", "triage": catalogue,
            "setting_names": {"max_actor_ckpt_to_keep": "grpo_max_actor_ckpt_to_keep"}}


def test_finished_says_steps_time_checkpoint_and_the_eval_command_with_the_inventory(tmp_path):
    config = _run(tmp_path, "train_2_steps.log", saved_steps=[2])
    found = notify.facts(config, "ended", exit_status=0, started=1000.0, now=1000.0 + 3725)
    text = notify.message(found, config["inventory"])
    assert found["status"] == "finished" and found["step"] == 2 and found["checkpoint"] == 2
    assert "finished at step 2/2 after 1h02m" in text and "global_step_2" in text
    assert "ansible-playbook site.yml -i inventories/sim --tags eval" in text


def test_failed_says_exit_status_triage_line_and_log(tmp_path):
    config = _run(tmp_path, "failed_tp.log")
    found = notify.facts(config, "ended", exit_status=1, started=0.0, now=60.0)
    text = notify.message(found, config["inventory"])
    assert found["status"] == "failed" and found["triage"]["cause"]
    assert "FAILED (exit status 1)" in text
    assert notify.triage_line(found["triage"]) in text and "Why: " in text and "Fix: " in text
    assert os.path.join(config["run_dir"], "logs", "latest.log") in text
    assert "--tags status" in text and "-i inventories/sim" in text


def test_lease_says_the_end_and_the_time_left(tmp_path):
    config = _run(tmp_path, "train_2_steps.log")
    found = notify.facts(config, "lease", now=1_800_000_000.0, lease_end=1_800_000_000.0 + 1500)
    text = notify.message(found, config["inventory"])
    assert "lease of p/e on npu-a ends at 2027-01-15 08:25 UTC (in 25m00s)" in text
    assert "no checkpoint saved yet" in text


def test_a_notification_error_never_raises(tmp_path):
    ok, line = notify.notify({"run_dir": str(tmp_path / "missing")}, "ended", SLACK, exit_status=0,
                             opener=_Opener(urllib.error.URLError("down")), sleep=lambda s: None)
    assert not ok and "XXXX" not in line


def test_the_sleeper_waits_for_its_time_and_gives_up_when_the_run_ended():
    clock = [100.0]

    def sleep(seconds):
        clock[0] += seconds
    assert notify.wait_for_lease(1000, 600, parent=7, clock=lambda: clock[0], sleep=sleep, getppid=lambda: 7)
    assert clock[0] == 400.0
    clock[0] = 100.0
    parents = iter([7, 7, 1])  # the run script went: this process was handed to init
    assert not notify.wait_for_lease(1000, 600, parent=7, clock=lambda: clock[0], sleep=sleep,
                                     getppid=lambda: next(parents))
    assert not notify.wait_for_lease(50, 10, parent=7, clock=lambda: 100.0, sleep=sleep, getppid=lambda: 7)


# --- the rendered run script, run as the stage runs it, against a real listener ---

class _Listener(http.server.BaseHTTPRequestHandler):
    received = None

    def do_POST(self):  # noqa: N802 - the standard library's name
        length = int(self.headers["Content-Length"])
        self.received.append((self.path, json.loads(self.rfile.read(length))))
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


@pytest.fixture(name="listener")
def _listener():
    handler = type("Handler", (_Listener,), {"received": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield "http://127.0.0.1:%d/hook/SECRETTOKEN" % server.server_address[1], handler.received
    server.shutdown()


def _render(tmp_path, config, python):
    filters = importlib.import_module("common_filters").FilterModule().filters()
    environment = jinja2.Environment(loader=jinja2.FileSystemLoader(os.path.join(ROOT, "roles", "grpo_train",
                                                                                 "templates")),
                                     undefined=jinja2.StrictUndefined, trim_blocks=True)
    environment.filters.update(filters)
    text = environment.get_template("run_grpo.sh.j2").render(
        grpo_train_profiles=["cpu-sim"], grpo_train_env_scripts=[], grpo_train_env_merged={"A": "1"},
        grpo_train_dir=config["run_dir"], grpo_train_override_list=["trainer.total_epochs=1"], grpo_stack_venv="",
        grpo_common_python=python, grpo_common_cluster_enabled=False, grpo_train_loggers=["console"],
        grpo_train_tracking={"folders": [], "file_dir": None}, grpo_common_state_dir=str(tmp_path / "state"))
    # the package's files as host_lib.yml installs them (the engine_sources filter's answer)
    for spec in filters["engine_sources"](["train.notify"], str(tmp_path / "state" / "lib")):
        os.makedirs(os.path.dirname(spec["path"]), exist_ok=True)
        with open(spec["path"], "w", encoding="utf-8") as handle:
            handle.write(spec["content"])
    script = os.path.join(config["run_dir"], "run_grpo.sh")
    with open(script, "w", encoding="utf-8") as handle:
        handle.write(text)
    with open(os.path.join(config["run_dir"], "notify.json"), "w", encoding="utf-8") as handle:
        json.dump(config, handle)
    return script, text


def _fake_python(tmp_path, log, rc, seconds=0):
    """A Python whose `-m verl.trainer.main_ppo` writes a real verl log and exits ``rc`` after ``seconds``; any
    other call is the real Python (the notifier)."""
    path = tmp_path / "python"
    path.write_text("#!/bin/sh\nif [ \"$2\" = verl.trainer.main_ppo ]; then sleep %s; cat %s; exit %d; fi\n"
                    "exec %s \"$@\"\n" % (seconds, shlex.quote(os.path.join(FIXTURES, log)), rc,
                                          shlex.quote(sys.executable)))
    path.chmod(0o755)
    return str(path)


def _launch(tmp_path, script, env, timeout=60):
    state = str(tmp_path / "jobs")
    os.makedirs(state, exist_ok=True)
    jobs.start(state, "train", ["bash", script], chdir=os.path.dirname(script), env=env)
    started = time.monotonic()
    done = jobs.wait(state, "train", timeout)
    return done, time.monotonic() - started


def _clean_env(monkeypatch):
    for name in ("GRPO_NOTIFY_URL", "GRPO_NOTIFY_PROXY", notify.LEASE_ENV, "http_proxy", "https_proxy",
                 "HTTP_PROXY", "HTTPS_PROXY"):
        monkeypatch.delenv(name, raising=False)


def test_a_finished_run_sends_one_message(tmp_path, listener, monkeypatch):
    _clean_env(monkeypatch)
    url, received = listener
    config = _run(tmp_path, "train_2_steps.log")
    script, text = _render(tmp_path, config, _fake_python(tmp_path, "train_2_steps.log", 0))
    assert "SECRETTOKEN" not in text
    done, _ = _launch(tmp_path, script, {"GRPO_NOTIFY_URL": url})
    assert done["state"] == "finished" and done["exit_status"] == 0
    assert len(received) == 1
    path, body = received[0]
    assert path == "/hook/SECRETTOKEN" and body["event"] == "ended" and body["status"] == "finished"
    assert body["step"] == 2 and "--tags eval" in body["text"]
    launcher = open(done["log"], encoding="utf-8").read()
    assert "ended message (json): delivered to http://127.0.0.1:" in launcher and "SECRETTOKEN" not in launcher
    assert "SECRETTOKEN" not in open(os.path.join(str(tmp_path / "jobs"), "train", "job.json")).read()


def test_a_failed_run_sends_one_message_with_the_triage_line_and_keeps_its_exit_status(tmp_path, listener,
                                                                                      monkeypatch):
    _clean_env(monkeypatch)
    url, received = listener
    config = _run(tmp_path, "failed_tp.log")
    script, _ = _render(tmp_path, config, _fake_python(tmp_path, "failed_tp.log", 1))
    done, _ = _launch(tmp_path, script, {"GRPO_NOTIFY_URL": url})
    assert done["state"] == "failed" and done["exit_status"] == 1
    assert len(received) == 1
    body = received[0][1]
    assert body["status"] == "failed" and body["exit_status"] == 1 and body["triage"]["cause"]
    assert notify.triage_line(body["triage"]) in body["text"]


def test_an_unreachable_webhook_changes_nothing_of_the_run(tmp_path, monkeypatch):
    _clean_env(monkeypatch)
    config = _run(tmp_path, "train_2_steps.log")
    script, _ = _render(tmp_path, config, _fake_python(tmp_path, "train_2_steps.log", 0))
    done, _ = _launch(tmp_path, script, {"GRPO_NOTIFY_URL": "http://127.0.0.1:9/hook/SECRETTOKEN"})
    assert done["state"] == "finished" and done["exit_status"] == 0
    launcher = open(done["log"], encoding="utf-8").read()
    assert "not delivered to http://127.0.0.1:9/***" in launcher and "SECRETTOKEN" not in launcher


def test_without_a_url_nothing_is_sent(tmp_path, listener, monkeypatch):
    _clean_env(monkeypatch)
    _url, received = listener
    config = _run(tmp_path, "train_2_steps.log")
    script, _ = _render(tmp_path, config, _fake_python(tmp_path, "train_2_steps.log", 0))
    done, _ = _launch(tmp_path, script, {})
    assert done["state"] == "finished" and received == []


def test_the_lease_sleeper_sends_once_while_the_run_goes(tmp_path, listener, monkeypatch):
    _clean_env(monkeypatch)
    url, received = listener
    config = dict(_run(tmp_path, "train_2_steps.log"), lease_lead_s=60)
    script, _ = _render(tmp_path, config, _fake_python(tmp_path, "train_2_steps.log", 0, seconds=4))
    lease_end = time.time() + 60 + 1.5  # the warning's time comes 1.5 s in, the run goes 4 s
    done, _ = _launch(tmp_path, script, {"GRPO_NOTIFY_URL": url, notify.LEASE_ENV: "%.0f" % lease_end})
    assert done["state"] == "finished"
    assert [body["event"] for _path, body in received] == ["lease", "ended"]
    assert received[0][1]["lease_end"] == pytest.approx(round(lease_end))


def test_the_lease_sleeper_dies_with_the_run_and_is_not_left(tmp_path, listener, monkeypatch):
    _clean_env(monkeypatch)
    url, received = listener
    config = dict(_run(tmp_path, "train_2_steps.log"), lease_lead_s=60)
    script, _ = _render(tmp_path, config, _fake_python(tmp_path, "train_2_steps.log", 0))
    done, took = _launch(tmp_path, script, {"GRPO_NOTIFY_URL": url,
                                            notify.LEASE_ENV: "%.0f" % (time.time() + 3600)})
    assert done["state"] == "finished" and not done["running"]
    # the job's wrapper found nothing left (it would have waited up to jobs.GRACE_S for it)
    assert took < jobs.GRACE_S
    assert [body["event"] for _path, body in received] == ["ended"]
    leftovers = [pid for pid in os.listdir("/proc") if pid.isdigit()
                 and "ascend_grpo.train.notify" in _cmdline(pid)]
    assert leftovers == []


def _cmdline(pid):
    try:
        with open("/proc/%s/cmdline" % pid, "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""
