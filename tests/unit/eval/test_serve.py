"""--tags serve: the model picked, the server's command, the gate, where it listens, and the chat check against a
local stand-in for vLLM's OpenAI-compatible server (its /v1/models and /v1/chat/completions answers are shaped as
vLLM 0.13's protocol documents them: choices[0].message.content and usage.completion_tokens)."""

import hashlib
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ascend_grpo.assets import math_data
from ascend_grpo.common.errors import FieldError
from ascend_grpo.eval import chat_check, serve_plan
from ascend_grpo.train import run_plan
from grpo_testkit import run_module

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python_plugins", "filter_plugins"))
import eval_filters  # noqa: E402


def _merged(root, step, template="{{ messages }}"):
    folder = root / ("global_step_%d" % step)
    folder.mkdir(parents=True)
    (folder / serve_plan.MERGE_RECORD).write_text("{}")
    (folder / "config.json").write_text("{}")
    (folder / "chat_template.jinja").write_text(template)
    return folder


def _report(reports, prefix, step, merged):
    reports.mkdir(parents=True, exist_ok=True)
    (reports / ("%s-step_%d.json" % (prefix, step))).write_text(json.dumps({"checkpoint": {"merged": str(merged)}}))


@pytest.fixture(name="ws")
def _ws(tmp_path):
    base = tmp_path / "models" / "base"
    base.mkdir(parents=True)
    (base / "config.json").write_text("{}")
    (base / "tokenizer_config.json").write_text(json.dumps({"chat_template": "base-template"}))
    return {"base": base, "merged": tmp_path / "merged", "reports": tmp_path / "reports", "prefix": "proj-exp"}


def _pick(ws, model=""):
    return serve_plan.pick(model, str(ws["base"]), str(ws["merged"]), str(ws["reports"]), ws["prefix"])


def test_nothing_evaluated_serves_the_base_model(ws):
    picked = _pick(ws)
    assert (picked["kind"], picked["model_dir"], picked["name"]) == ("base", str(ws["base"]), "base")
    assert "no trained step was evaluated" in picked["why"]


def test_the_newest_evaluated_step_whose_merge_is_there(ws):
    for step in (20, 40, 60):
        merged = _merged(ws["merged"], step)
        _report(ws["reports"], ws["prefix"], step, merged)
    # step 60's merged folder was removed: its report no longer counts; another run's report never does
    (ws["merged"] / "global_step_60" / serve_plan.MERGE_RECORD).unlink()
    _report(ws["reports"], "other-run", 80, _merged(ws["merged"] / "x", 80))
    picked = _pick(ws)
    assert (picked["kind"], picked["step"], picked["name"]) == ("trained", 40, "trained-step-40")
    assert picked["model_dir"].endswith("global_step_40")


def test_base_and_a_merged_step_as_asked(ws):
    _merged(ws["merged"], 20)
    assert _pick(ws, "base")["kind"] == "base"
    assert _pick(ws, "20")["model_dir"].endswith("global_step_20")


@pytest.mark.parametrize("value", ["30", "0", "-1", "latest", "1.5"])
def test_a_step_that_is_not_merged_or_no_step_is_refused_naming_the_fix(ws, value):
    _merged(ws["merged"], 20)
    with pytest.raises(FieldError) as err:
        _pick(ws, value)
    assert err.value.field == "model"
    if value == "30":
        assert "--tags eval" in err.value.msg and "step 30" in err.value.msg and "not merged" in err.value.msg


def test_the_command_and_what_the_user_may_not_take_over():
    picked = {"model_dir": "/m", "name": "trained-step-2"}
    argv = serve_plan.command("/v/bin/python", picked, "127.0.0.1", 8000, ["--enforce-eager"], ["--max-model-len",
                                                                                                 "4096"])
    assert argv == ["/v/bin/python", "-m", "vllm.entrypoints.openai.api_server", "--model", "/m",
                    "--served-model-name", "trained-step-2", "--host", "127.0.0.1", "--port", "8000",
                    "--enforce-eager", "--max-model-len", "4096"]
    for bad in (["--host", "0.0.0.0"], ["--port=80"], ["--model", "/x"]):
        with pytest.raises(FieldError) as err:
            serve_plan.command("p", picked, "127.0.0.1", 8000, [], bad)
        assert err.value.field == "args"


def test_uvloop_stand_in_only_when_the_stack_lacks_it():
    assert serve_plan.needs_uvloop_stand_in("py", run=lambda argv, timeout: (1, "", "No module named 'uvloop'"))
    assert not serve_plan.needs_uvloop_stand_in("py", run=lambda argv, timeout: (0, "", ""))


def test_the_stand_in_runs_a_coroutine_as_uvloop_run_does():
    # vLLM 0.13's api_server: `uvloop.run(run_server(args))`
    folder = os.path.join(os.path.dirname(__file__), "..", "..", "..", "roles", "grpo_eval", "files", "serve")
    code = "import uvloop\nasync def f():\n    return 7\nprint(uvloop.run(f()), uvloop.__file__)"
    import subprocess
    out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=folder), capture_output=True,
                         text=True, check=True).stdout.split()
    assert out[0] == "7" and os.path.join("files", "serve", "uvloop") in out[1]


def test_template_sha256_of_the_served_folder(ws):
    merged = _merged(ws["merged"], 20, template="T")
    assert serve_plan.template_sha256(str(merged)) == hashlib.sha256(b"T").hexdigest()
    assert serve_plan.template_sha256(str(ws["base"])) == hashlib.sha256(b"base-template").hexdigest()
    assert serve_plan.template_sha256(str(ws["merged"])) is None


RUNNING = {"running": True, "pid": 42, "step": 3, "total_steps": 10, "steps_logged": True,
           "last_launch": {"cards": "0,1"}}


def test_the_gate_refuses_while_the_run_holds_the_servers_card():
    gate = run_plan.serve_gate(RUNNING, "1", "p/e", lambda tags: "CMD %s" % tags)
    assert gate["action"] == "refuse" and gate["shared_cards"] == ["1"]
    text = " ".join(gate["lines"])
    assert "step 3/10" in text and "CMD stop" in text and "CMD status" in text and "nothing changed" in text


@pytest.mark.parametrize("run", [None, dict(RUNNING, running=False), RUNNING])
def test_the_gate_serves_when_no_run_holds_its_card(run):
    assert run_plan.serve_gate(run, "5", "p/e")["action"] == "serve"


def test_the_gate_filter_carries_the_inventory():
    gate = eval_filters.serve_gate(RUNNING, "0", "p/e", ["/proj/inventories/sim"], "/proj")
    assert "ansible-playbook site.yml -i inventories/sim --tags stop" in " ".join(gate["lines"])


def test_where_it_listens_follows_tensorboards_rules():
    assert eval_filters.serve_bind("", "host", "")["address"] == "127.0.0.1"
    assert eval_filters.serve_bind("", "", "172.17.0.2")["address"] == "172.17.0.2"
    refused = eval_filters.serve_bind("0.0.0.0", "", "172.17.0.2")
    assert "grpo_eval_serve_host" in refused["problem"] and "every interface" in refused["problem"]
    view = eval_filters.serve_view("172.17.0.2", 8000, "me@npu", "trained-step-2", "-i inventories/sim")
    assert view["ssh"] == "ssh -N -L 8000:172.17.0.2:8000 me@npu"
    assert view["stop"] == "ansible-playbook site.yml -i inventories/sim --tags stop"
    assert '"model": "trained-step-2"' in view["try"]


class _Server(BaseHTTPRequestHandler):
    """vLLM's two endpoints the check calls; it answers the boxed truth for the first problem only."""

    asked = []

    def log_message(self, *args):
        pass

    def do_GET(self):
        body = json.dumps({"object": "list", "data": [{"id": "trained-step-2"}]}).encode()
        self.send_response(200 if self.path == "/v1/models" else 404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Server.asked.append(request)
        content = request["messages"][0]["content"]
        text = "The answer is \\boxed{-3}." if "slope" in content else "I do not know."
        body = json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
                           "usage": {"completion_tokens": 7}}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(name="server")
def _server():
    _Server.asked = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Server)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield "http://127.0.0.1:%d" % httpd.server_address[1]
    httpd.shutdown()


REWARD = '''
def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    return 1.0 if "\\\\boxed{%s}" % ground_truth in solution_str else 0.0
'''


def _math_json(tmp_path):
    records = {"Algebra_0": {"problem": "What is the slope of the line through $(1, 2)$ and $(3, -4)$?",
                             "level": "Level 2", "type": "Algebra", "solution": "So $\\boxed{-3}$."},
               "Algebra_x": {"problem": "No boxed answer here", "level": "Level 1", "type": "Algebra",
                             "solution": "none"},
               "Algebra_1": {"problem": "Product?", "level": "Level 3", "type": "Algebra",
                             "solution": "It is $\\boxed{32}$."}}
    path = tmp_path / "math.json"
    path.write_text(json.dumps(records))
    reward = tmp_path / "reward.py"
    reward.write_text(REWARD)
    return path, reward


def test_the_chat_check_asks_as_training_and_scores_with_the_reward(tmp_path, server):
    math_json, reward = _math_json(tmp_path)
    result = run_module("grpo_chat_check", dict(url=server, model="trained-step-2", math_json=str(math_json),
                                                count=5, max_tokens=16, reward_path=str(reward),
                                                python=sys.executable, wait_seconds=5))
    assert not result["changed"] and "failed" not in result, result
    assert [a["id"] for a in result["answers"]] == ["Algebra_0", "Algebra_1"]  # no boxed truth: skipped
    assert [a["score"] for a in result["answers"]] == [1.0, 0.0]
    assert result["summary"]["problems"] == 2 and result["summary"]["score_sum"] == 1.0
    # the user message is training's (problem, a space, verl's instruction), greedy, bounded
    first = _Server.asked[0]
    assert first["messages"] == [{"role": "user", "content": "What is the slope of the line through $(1, 2)$ and "
                                  "$(3, -4)$? " + math_data.INSTRUCTION}]
    assert first["temperature"] == 0 and first["max_tokens"] == 16 and first["model"] == "trained-step-2"
    assert "score 1 (truth -3)" in result["lines"][0]


def test_a_server_job_that_ended_fails_the_wait_at_once_with_its_log(tmp_path):
    job = tmp_path / "serve"
    job.mkdir()
    (job / "exit").write_text("1\n")
    (job / "serve.log").write_text("ModuleNotFoundError: No module named 'uvloop'\n")
    with pytest.raises(chat_check.ChatCheckError) as err:
        chat_check.wait_ready("http://127.0.0.1:9", 600, str(job), sleep=lambda s: None)
    assert "exit status 1" in err.value.msg and "uvloop" in err.value.msg


def test_a_slow_server_fails_naming_the_setting(tmp_path):
    ticks = iter(range(0, 1000, 50))
    with pytest.raises(chat_check.ChatCheckError) as err:
        chat_check.wait_ready("http://127.0.0.1:9", 100, None, clock=lambda: next(ticks), sleep=lambda s: None)
    assert "{wait_seconds}" in err.value.msg
