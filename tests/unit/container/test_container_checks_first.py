"""The container stage checks everything Docker would refuse only when it makes the container (a network that does
not exist, a size past Docker's 64-bit bytes) and gives its built-in mounts the extra mounts' refusals, all in its
preflight: before, a bad value made docker_container remove the running container and then fail.

The stage-level tests run the role on this machine against a stand-in Docker engine (a Unix socket answering the
read-only calls the preflight makes, recording every request): the run fails naming the setting, the engine was
only read (no create, no remove), and the host's folders and the workspace are unchanged, path for path."""

import json
import os
import socketserver
import threading
from http.server import BaseHTTPRequestHandler

import pytest
from grpo_testkit import run_role, tree_snapshot

from ascend_grpo.common import settings


# ---- the engine checks, against Docker's own limits -----------------------------------------------------------------

@pytest.mark.parametrize("value", ["8g", "8G", "64m", "0", "8589934591g", "8589934591G"])
def test_sizes_that_fit_docker_pass(value):
    assert settings.problems([["size", "npu_container_shm_size", value]]) == []


# 2^63 bytes is the first number Go's int64 (Docker's HostConfig.ShmSize) cannot hold; 8589934592g is exactly 2^63.
# 9223372036854775807 is 2^63-1 itself, but Ansible's human_to_bytes (what the Docker modules convert with) goes
# through a float and sends 2^63.
@pytest.mark.parametrize("value", ["8589934592g", "9223372036854775808", "9223372036854775807", "99999999999g",
                                   "9" * 400])
def test_sizes_past_dockers_int64_are_refused_naming_the_setting(value):
    (problem,) = settings.problems([["size", "npu_container_shm_size", value]])
    assert problem.startswith("npu_container_shm_size (%r) is more bytes than Docker takes" % value)
    assert "2^63-1" in problem


def test_size_bytes_converts_as_the_docker_modules_do():
    from ansible.module_utils.common.text.formatters import human_to_bytes

    for value in ("8g", "8G", "512m", "1k", "7b", "123", "8589934591g", "9223372036854775807"):
        assert settings.size_bytes(value) == human_to_bytes(value), value


def test_a_network_that_does_not_exist_is_refused_naming_the_setting_and_the_fix():
    missing = {"exists": False, "network": None, "changed": False}
    problem = settings.docker_network_problem("npu_container_network", "grpo-net", missing)
    assert problem.startswith("npu_container_network ('grpo-net') names a Docker network that does not exist")
    assert "docker network create grpo-net" in problem
    assert settings.docker_network_problem("npu_container_network", "grpo-net", {"exists": True}) is None
    for builtin in ("", "bridge", "host", "none", "default"):
        assert settings.docker_network_problem("npu_container_network", builtin, missing) is None
    # not asked (the engine did not answer: that is reported as its own problem)
    assert settings.docker_network_problem("npu_container_network", "grpo-net", {"skipped": True}) is None
    asked = settings.docker_network_problem("npu_container_network", "grpo-net", {"failed": True, "msg": "denied"})
    assert asked.startswith("npu_container_network ('grpo-net'): the Docker engine could not say") and "denied" in asked


# ---- the stage, against a stand-in engine ---------------------------------------------------------------------------

class _Engine(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


def _handler(requests):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # a Unix socket's client has no address to log
            pass

        def address_string(self):
            return "unix"

        def _answer(self, status, body, headers=()):
            data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json" if not isinstance(body, str) else "text/plain")
            self.send_header("Api-Version", "1.43")
            self.send_header("Content-Length", str(len(data)))
            for key, value in headers:
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

        def _any(self):
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            requests.append((self.command, self.path))
            path = self.path.split("?")[0]
            path = "/" + path.split("/", 2)[2] if path.startswith("/v1.") else path
            if path == "/_ping":
                return self._answer(200, "OK")
            if path == "/version":
                return self._answer(200, {"ApiVersion": "1.43", "MinAPIVersion": "1.12", "Version": "24.0.7",
                                          "Os": "linux", "Arch": "amd64"})
            if path == "/info":
                return self._answer(200, {"DockerRootDir": "/var/lib/docker", "ServerVersion": "24.0.7",
                                          "Containers": 1, "Images": 1})
            if path == "/networks":  # none but the built-in ones
                return self._answer(200, [])
            if path.startswith("/networks/"):
                return self._answer(404, {"message": "network %s not found" % path[10:]})
            if path.startswith("/images/"):
                return self._answer(404, {"message": "No such image"})
            return self._answer(404, {"message": "page not found"})

        do_GET = do_HEAD = do_POST = do_DELETE = do_PUT = _any

    return Handler


@pytest.fixture
def engine(tmp_path):
    """A stand-in Docker engine on a Unix socket: ``(DOCKER_HOST, the requests it got)``."""
    sock = str(tmp_path / "docker.sock")
    requests = []
    server = _Engine(sock, _handler(requests))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield "unix://" + sock, requests
    server.shutdown()
    server.server_close()


@pytest.fixture
def host(tmp_path):
    """A host's Ascend folders and a workspace holding an earlier run's record and checkpoint."""
    root = tmp_path / "host"
    for folder in ("driver/lib64", "add-ons", "ws/.grpo", "ws/checkpoints/p/e/global_step_5/actor"):
        (root / folder).mkdir(parents=True)
    (root / "driver" / "version.info").write_text("Version=24.1.rc2\n")
    (root / "ws" / ".grpo" / "container.json").write_text('{"name": "qwen-grpo"}\n')
    (root / "ws" / "checkpoints" / "p" / "e" / "global_step_5" / "actor" / "model.pt").write_bytes(b"\x00" * 64)
    os.chmod(root / "ws" / ".grpo" / "container.json", 0o600)
    return root


def _stage(tmp_path, host, engine, **settings_):
    docker_host, requests = engine
    extra = dict({"npu_container_driver_dir": str(host / "driver"), "npu_container_addons_dir": str(host / "add-ons"),
                  "npu_container_workspace_host": str(host / "ws"), "npu_container_dev_dir": str(host),
                  "npu_container_mount_npu_smi": False}, **settings_)
    before = tree_snapshot(str(host))
    done = run_role(tmp_path, "npu_container", extra, env={"DOCKER_HOST": docker_host})
    assert done.returncode != 0, done.stdout[-3000:]
    assert tree_snapshot(str(host)) == before
    assert [r for r in requests if r[0] not in ("GET", "HEAD")] == []  # the engine was only read
    (_host, task, msg), = done.failed
    return task, msg, requests


def test_a_shm_size_past_int64_fails_the_stage_before_anything_changes(tmp_path, host, engine):
    task, msg, _ = _stage(tmp_path, host, engine, npu_container_shm_size="8589934592g")
    assert task == "Preflight | Check every setting of the stage (names, paths, environment variables, mounts)"
    assert "npu_container_shm_size ('8589934592g') is more bytes than Docker takes" in msg


@pytest.mark.parametrize("setting, value, shown", [
    ("npu_container_driver_dir", "/", "mounts / (which holds the Docker socket) into the container"),
    ("npu_container_addons_dir", "/etc", "mounts /etc into the container"),
    ("npu_container_workspace_host", "/root/grpo", "mounts /root into the container"),
    ("npu_container_driver_dir", "/var/lib/docker/volumes", "mounts /var/lib/docker into the container"),
])
def test_the_built_in_mounts_get_the_extra_mounts_refusals(tmp_path, host, engine, setting, value, shown):
    task, msg, _ = _stage(tmp_path, host, engine, **{setting: value})
    assert task == "Preflight | Check every setting of the stage (names, paths, environment variables, mounts)"
    assert ("%s: '%s:" % (setting, value)) in msg and shown in msg, msg
    assert "npu_container_allow_host_access" in msg


def test_the_built_in_mounts_as_set_by_default_pass():
    # the defaults and a workspace under /data are no host access; a read-only driver below /etc is as the extra
    # mounts allow it
    assert settings.problems([["mounts", "npu_container_driver_dir", ["/usr/local/Ascend/driver:/usr/local/Ascend/"
                                                                      "driver:ro"]],
                              ["mounts", "npu_container_workspace_host", ["/data/grpo:/data/grpo"]]]) == []


def test_a_network_that_does_not_exist_fails_the_stage_before_anything_changes(tmp_path, host, engine):
    task, msg, requests = _stage(tmp_path, host, engine, npu_container_network="grpo-net")
    assert task == "Preflight | Require a running Docker engine and a ready NPU host"
    assert "npu_container_network ('grpo-net') names a Docker network that does not exist" in msg
    assert any("/networks" in path for _method, path in requests), requests


def test_two_mounts_on_one_container_path_are_refused_naming_both():
    """Docker refuses a duplicate mount point (and a mount on /) only when it creates the container."""
    entries = [["npu_container_driver_dir", "/usr/local/Ascend/driver:/usr/local/Ascend/driver:ro"],
               ["npu_container_workspace", "/data/grpo:/data/grpo"],
               ["npu_container_extra_volumes", "/srv/cache:/data/grpo/"], ["npu_container_extra_volumes", "/srv/x:/"],
               ["npu_container_extra_volumes", "/srv/ok:/data/grpo/cache"]]
    assert settings.problems([["mount_targets", "npu_container_extra_volumes", entries]]) == [
        "npu_container_extra_volumes: '/srv/cache:/data/grpo/' mounts onto /data/grpo in the container, where "
        "npu_container_workspace already mounts '/data/grpo:/data/grpo': Docker refuses two mounts on one path (a "
        "duplicate mount point): give another container path",
        "npu_container_extra_volumes: '/srv/x:/' mounts onto / in the container, which Docker refuses: give another "
        "container path"]


def test_an_extra_mount_on_the_driver_path_fails_the_stage_before_anything_changes(tmp_path, host, engine):
    task, msg, _ = _stage(tmp_path, host, engine,
                          npu_container_extra_volumes=[str(host / "add-ons") + ":/usr/local/Ascend/driver:ro"])
    assert task == "Preflight | Check every setting of the stage (names, paths, environment variables, mounts)"
    assert "mounts onto /usr/local/Ascend/driver in the container, where npu_container_driver_dir already mounts" \
        in msg, msg
