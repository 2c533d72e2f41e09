"""The container stage's image pull is polled and bounded by npu_container_pull_minutes (issue 46, item 4): a pull
past its time is refused naming that setting, the image and the image as found after it (image_timed_out.yml, the
tasks a later `docker load` step reuses), and a pull that fails of its own keeps its message.

The refusal runs on this machine against a stand-in Docker engine (a Unix socket answering the image look-ups), after
a step that runs out of its seconds as the pull would of its minutes."""

import json
import socketserver
import sys
import textwrap
import threading
from http.server import BaseHTTPRequestHandler

import pytest
import yaml

from grpo_testkit import ROOT, playbook

IMAGE = "cann:8.2.RC1-910b"
IMAGE_ID = "sha256:" + "ab" * 32


class _Engine(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


def _handler(has_image, requests):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def address_string(self):
            return "unix"

        def _answer(self, status, body):
            data = json.dumps(body).encode() if not isinstance(body, str) else body.encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json" if not isinstance(body, str) else "text/plain")
            self.send_header("Api-Version", "1.43")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            requests.append((self.command, self.path))
            path = self.path.split("?")[0]
            path = "/" + path.split("/", 2)[2] if path.startswith("/v1.") else path
            image = {"Id": IMAGE_ID, "RepoTags": [IMAGE], "Created": "2026-12-01T00:00:00Z", "Size": 1}
            if path == "/_ping":
                return self._answer(200, "OK")
            if path == "/version":
                return self._answer(200, {"ApiVersion": "1.43", "MinAPIVersion": "1.12", "Version": "24.0.7"})
            if path == "/images/json":
                return self._answer(200, [image] if has_image else [])
            if path.startswith("/images/") and path.endswith("/json"):
                return self._answer(200, image) if has_image else self._answer(404, {"message": "No such image"})
            return self._answer(404, {"message": "page not found"})

        do_HEAD = do_GET

    return Handler


def _engine(tmp_path, has_image):
    sock = str(tmp_path / ("docker-%s.sock" % has_image))
    requests = []
    server = _Engine(sock, _handler(has_image, requests))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, "unix://" + sock, requests


def _run(tmp_path, command, has_image=False):
    """A step that brings the image (here a command bounded in seconds), as image.yml runs the pull, then the
    role's own refusal of a step that ran out of time."""
    book = tmp_path / "pull.yml"
    book.write_text(textwrap.dedent("""\
        - name: The image step, then the container stage's refusal of one that ran out of time
          hosts: localhost
          connection: local
          gather_facts: false
          vars:
            npu_container_image: %s
            npu_container_pull_minutes: 120
          tasks:
            - name: Image | Pull the image
              ansible.builtin.command: %s
              register: _npu_container_pull
              async: 2
              poll: 1
              changed_when: false
              failed_when: _npu_container_pull is failed and not (_npu_container_pull | timed_out)

            - name: Image | Refuse a pull that ran out of time
              ansible.builtin.include_role:
                name: npu_container
                tasks_from: image_timed_out.yml
              vars:
                _npu_container_image_step:
                  result: "{{ _npu_container_pull }}"
                  step: pull
                  setting: npu_container_pull_minutes
              when: _npu_container_pull | timed_out
        """ % (IMAGE, command)))
    server, docker_host, requests = _engine(tmp_path, has_image)
    try:
        done = playbook(str(book), "-i", "localhost,", "-e", "ansible_python_interpreter=" + sys.executable,
                        env={"DOCKER_HOST": docker_host})
    finally:
        server.shutdown()
        server.server_close()
    return done, requests


def test_a_pull_past_its_time_is_refused_naming_the_setting_the_image_and_that_it_is_not_there(tmp_path):
    done, requests = _run(tmp_path, "sleep 30")
    (host, task, msg), = done.failed
    assert task == "Image | Refuse the step that ran out of time, naming the setting to raise"
    assert msg.startswith("Pulling image %s did not finish on localhost within 120 minutes "
                          "(npu_container_pull_minutes) and was stopped. As found after it, image %s is not on the "
                          "host; the layers Docker pulled in full are kept, so the next pull goes on from them. "
                          "Raise npu_container_pull_minutes" % (IMAGE, IMAGE)), msg
    assert "docker load -i cann.tar" in msg
    assert requests and all(method in ("GET", "HEAD") for method, _path in requests)  # only looked


def test_a_pull_past_its_time_says_when_the_image_is_there_after_all(tmp_path):
    done, _requests = _run(tmp_path, "sleep 30", has_image=True)
    (_host, _task, msg), = done.failed
    assert "As found after it, image %s is on the host (id %s): a rerun uses it." % (IMAGE, IMAGE_ID) in msg, msg
    assert "npu_container_pull_minutes" in msg


def test_a_pull_that_fails_of_its_own_is_not_called_a_time_out(tmp_path):
    done, requests = _run(tmp_path, "ls /no/such/image")
    (_host, task, msg), = done.failed
    assert task == "Image | Pull the image" and "npu_container_pull_minutes" not in str(msg)
    assert requests == []


def _tasks(name):
    with open("%s/roles/npu_container/tasks/%s" % (ROOT, name), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def _find(tasks, name):
    for task in tasks:
        if task.get("name") == name:
            return task
        for key in ("block", "rescue", "always"):
            found = _find(task.get(key) or [], name)
            if found:
                return found
    return None


def test_the_stages_pull_runs_as_the_steps_above_bounded_by_its_setting():
    """image.yml's pull is the step the tests above stand in for: async from npu_container_pull_minutes, polled,
    a time-out let by to the refusal, which names that setting; and it runs only when the image is missing."""
    tasks = _tasks("image.yml")
    pull = _find(tasks, "Image | Pull the image")
    assert pull["async"] == "{{ (npu_container_pull_minutes | int) * 60 }}" and 0 < pull["poll"] <= 15
    assert pull["failed_when"] == "_npu_container_pull is failed and not (_npu_container_pull | timed_out)"
    refuse = _find(tasks, "Image | Refuse a pull that ran out of time")
    assert refuse["ansible.builtin.include_tasks"] == "image_timed_out.yml"
    assert refuse["vars"]["_npu_container_image_step"]["setting"] == "npu_container_pull_minutes"
    assert refuse["when"] == "_npu_container_pull | timed_out"
    missing = _find(tasks, "Image | Pull it when absent")
    # a missing image with an offline bundle set is loaded from it instead (image_load.yml)
    assert missing["when"] == ("_npu_container_image_info.images | length == 0 and "
                               "grpo_offline_bundle | default('') | length == 0")


def test_the_setting_is_checked_as_a_positive_whole_number_of_minutes():
    from ascend_grpo.common import settings

    with open("%s/roles/npu_container/meta/argument_specs.yml" % ROOT, encoding="utf-8") as handle:
        spec = yaml.safe_load(handle)
    assert spec["argument_specs"]["main"]["options"]["npu_container_pull_minutes"]["default"] == 120
    for bad in (0, -1, "2h"):
        (problem,) = [p["message"] for p in settings.check_settings(spec, {"npu_container_pull_minutes": bad})]
        assert problem.startswith("npu_container_pull_minutes"), problem
    assert settings.check_settings(spec, {"npu_container_pull_minutes": 120}) == []
