"""Weights: plan and fetch through huggingface_hub's real download code against a stand-in hub, and local folders."""

import json
import os
import sys
import time

import pytest

from ascend_grpo.assets import weights
from ascend_grpo.common import jobs
from fakehub import FakeHub

REPO = "Org/Tiny-Instruct"


def _model_folder(path, weight_bytes=300_000):
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps({"model_type": "qwen2", "hidden_size": 64}))
    (path / "generation_config.json").write_text("{}")
    (path / "tokenizer.json").write_text(json.dumps({"model": {"type": "BPE"}}))
    (path / "tokenizer_config.json").write_text(json.dumps({"chat_template": "{{ messages }}"}))
    (path / "model.safetensors").write_bytes(os.urandom(weight_bytes))
    (path / "pytorch_model.bin").write_bytes(b"legacy format, not needed")
    (path / "README.md").write_text("a model card")
    return path


@pytest.fixture()
def hub_root(tmp_path):
    root = tmp_path / "hub"
    _model_folder(root / "models" / REPO)
    return root


def _spec(dest, endpoint, **kw):
    return dict({"source": "hf", "dest": str(dest), "repo": REPO, "revision": "main", "endpoint": endpoint}, **kw)


def test_hub_plan_fetch_and_rerun(hub_root, tmp_path):
    dest = tmp_path / "models" / "tiny"
    with FakeHub(str(hub_root)) as hub:
        step = weights.plan(_spec(dest, hub.url))
        assert step["fetch"] == "download"
        # only what training needs: no legacy .bin, no model card
        assert sorted(step["files"]) == ["config.json", "generation_config.json", "model.safetensors",
                                         "tokenizer.json", "tokenizer_config.json"]
        out = []

        class Out:
            @staticmethod
            def write(text):
                out.append(text)

            @staticmethod
            def flush():
                pass

        manifest = weights.fetch(step, out=Out, interval=0.05)
        assert manifest["commit"] == step["commit"] and not (dest / "pytorch_model.bin").exists()
        assert any(line.startswith("complete: 5 files") for line in out)
        hub.requests.clear()
        again = weights.plan(_spec(dest, hub.url))
        # checked from the manifest and the files on disk, without asking the hub
        assert again["fetch"] == "none" and hub.requests == []


def test_complete_folder_needs_no_network(hub_root, tmp_path):
    dest = tmp_path / "tiny"
    with FakeHub(str(hub_root)) as hub:
        weights.fetch(weights.plan(_spec(dest, hub.url)), out=open(os.devnull, "w", encoding="utf-8"))
    # the hub is gone (an offline rerun): still complete
    assert weights.plan(_spec(dest, "http://127.0.0.1:9"))["fetch"] == "none"


def test_a_damaged_file_is_fetched_again(hub_root, tmp_path):
    dest = tmp_path / "tiny"
    with FakeHub(str(hub_root)) as hub:
        weights.fetch(weights.plan(_spec(dest, hub.url)), out=open(os.devnull, "w", encoding="utf-8"))
        with open(dest / "model.safetensors", "r+b") as handle:
            handle.truncate(1000)
        step = weights.plan(_spec(dest, hub.url))
        assert step["fetch"] == "download" and step["missing"] == ["model.safetensors"]
        weights.fetch(step, out=open(os.devnull, "w", encoding="utf-8"))
    assert os.path.getsize(dest / "model.safetensors") == 300_000


def test_the_edited_tokenizer_config_is_not_replaced(hub_root, tmp_path):
    dest = tmp_path / "tiny"
    with FakeHub(str(hub_root)) as hub:
        weights.fetch(weights.plan(_spec(dest, hub.url)), out=open(os.devnull, "w", encoding="utf-8"))
        (dest / "tokenizer_config.json").write_text(json.dumps({"chat_template": "edited by the stage"}))
        (dest / "config.json").unlink()
        step = weights.plan(_spec(dest, hub.url))
        assert step["missing"] == ["config.json"]
        weights.fetch(step, out=open(os.devnull, "w", encoding="utf-8"))
    assert "edited by the stage" in (dest / "tokenizer_config.json").read_text()
    assert weights.plan(_spec(dest, "http://127.0.0.1:9"))["fetch"] == "none"


@pytest.mark.parametrize("change, field, words", [
    ({"repo": "Org/No-Such-Model"}, "repo", "no model repository Org/No-Such-Model"),
    ({"revision": "v9.9"}, "revision", "has no revision 'v9.9'"),
    ({"allow": ["*.bin"]}, "allow", r"no \*\.safetensors"),
])
def test_bad_hub_input_fails_before_anything_is_written(hub_root, tmp_path, change, field, words):
    dest = tmp_path / "tiny"
    with FakeHub(str(hub_root)) as hub:
        with pytest.raises(weights.WeightsError, match=words) as err:
            weights.plan(_spec(dest, hub.url, **change))
    assert err.value.field == field and not dest.exists()


def test_unreachable_endpoint_names_it(tmp_path):
    with pytest.raises(weights.WeightsError, match="could not reach http://127.0.0.1:9") as err:
        weights.plan(_spec(tmp_path / "tiny", "http://127.0.0.1:9"))
    assert err.value.field == "endpoint"


def partial_bytes(folder):
    """Bytes in huggingface_hub's partial files under ``folder`` (one may be renamed while it is read)."""
    total = 0
    for path in folder.rglob("*.incomplete") if folder.exists() else []:
        try:
            total += path.stat().st_size
        except FileNotFoundError:
            pass
    return total


def test_interrupted_download_resumes(hub_root, tmp_path):
    """Kill the fetch job mid-file; the next fetch continues from the partial file (a Range request).

    huggingface_hub writes in 10 MiB chunks, so the file is 30 MB served at 10 MB/s.
    """
    dest = tmp_path / "tiny"
    big = hub_root / "models" / REPO / "model.safetensors"
    big.write_bytes(os.urandom(30_000_000))
    state = tmp_path / "jobs"
    with FakeHub(str(hub_root), rate=10_000_000) as hub:
        step = weights.plan(_spec(dest, hub.url))
        plan_file = tmp_path / "plan.json"
        plan_file.write_text(json.dumps(step))
        # as the assets stage runs it: the package's module (the tests' Python has the package installed)
        jobs.start(str(state), "weights", [sys.executable, "-m", "ascend_grpo.assets.weights", "fetch", "--plan", str(plan_file),
                                           "--interval", "0.2"])
        partial = dest / ".cache" / "huggingface" / "download"
        deadline = time.time() + 20
        while time.time() < deadline:
            done = partial_bytes(partial)
            if done >= 10 << 20:
                break
            time.sleep(0.05)
        jobs.stop(str(state), "weights", grace=2)
        assert 10 << 20 <= done < 30_000_000
        assert jobs.status(str(state), "weights")["progress"].startswith("fetched ")
        assert " of 0.03 GB (" in jobs.status(str(state), "weights")["progress"]
        hub.requests.clear()
        hub.ranges = []
        step = weights.plan(_spec(dest, hub.url))
        assert step["fetch"] == "download"
        weights.fetch(step, out=open(os.devnull, "w", encoding="utf-8"))
        # the second fetch asked only for the rest of the file
        assert hub.ranges == ["bytes=%d-" % done]
    assert (dest / "model.safetensors").read_bytes() == big.read_bytes()


def test_a_dropped_link_resumes_without_a_second_full_download(hub_root, tmp_path):
    """Fault drill: the connection drops mid-file, twice. huggingface_hub (0.36) does not retry a body cut short
    by itself (IncompleteRead is no ConnectionError to it), so the fetch fails, naming the endpoint; what it wrote
    stays in the partial file (it writes whole 10 MiB chunks), and each rerun asks only for the rest. In all, the
    hub sends the file about once, not twice."""
    dest = tmp_path / "tiny"
    big = hub_root / "models" / REPO / "model.safetensors"
    big.write_bytes(os.urandom(30_000_000))
    chunk = 10 * 1024 * 1024  # huggingface_hub's DOWNLOAD_CHUNK_SIZE: what it writes at a time
    outcomes = []
    with FakeHub(str(hub_root), cuts=2, cut_after=11_000_000) as hub:
        for _ in range(3):  # the user reruns the stage
            try:
                weights.fetch(weights.plan(_spec(dest, hub.url)), out=open(os.devnull, "w", encoding="utf-8"))
                outcomes.append("fetched")
                break
            except weights.WeightsError as err:
                outcomes.append(err.field)
                assert "the download from %s for %s was cut" % (hub.url, REPO) in str(err)
                assert "rerun the stage; it continues from what was fetched" in str(err)
        assert outcomes == ["endpoint", "endpoint", "fetched"]
        assert hub.ranges == ["bytes=%d-" % chunk, "bytes=%d-" % (2 * chunk)]
        assert hub.served < 1.1 * big.stat().st_size + 1_000_000
    assert (dest / "model.safetensors").read_bytes() == big.read_bytes()


def test_local_folder_copied_then_complete(tmp_path):
    src = _model_folder(tmp_path / "offline" / "tiny")
    dest = tmp_path / "models" / "tiny"
    spec = {"source": "local", "dest": str(dest), "local_dir": str(src)}
    step = weights.plan(spec)
    assert step["fetch"] == "copy" and "pytorch_model.bin" not in step["files"]
    weights.fetch(step, out=open(os.devnull, "w", encoding="utf-8"))
    assert (dest / "model.safetensors").read_bytes() == (src / "model.safetensors").read_bytes()
    assert weights.plan(spec)["fetch"] == "none"


def test_local_folder_in_place_is_recorded(tmp_path):
    src = _model_folder(tmp_path / "tiny")
    spec = {"source": "local", "dest": str(src), "local_dir": str(src)}
    step = weights.plan(spec)
    assert step["fetch"] == "record"
    weights.fetch(step, out=open(os.devnull, "w", encoding="utf-8"))
    assert weights.plan(spec)["fetch"] == "none"


@pytest.mark.parametrize("remove, words", [
    ("model.safetensors", "no weights"),
    ("config.json", "no config.json"),
    ("tokenizer.json", "no tokenizer"),
])
def test_local_folder_without_what_training_needs(tmp_path, remove, words):
    src = _model_folder(tmp_path / "tiny")
    (src / remove).unlink()
    if remove == "model.safetensors":
        (src / "pytorch_model.bin").unlink()
    with pytest.raises(weights.WeightsError, match=words) as err:
        weights.plan({"source": "local", "dest": str(tmp_path / "dest"), "local_dir": str(src)})
    assert err.value.field == "local_dir"


def test_sharded_folder_needs_every_shard(tmp_path):
    src = _model_folder(tmp_path / "tiny")
    (src / "model.safetensors").unlink()
    (src / "model-00001-of-00002.safetensors").write_bytes(b"x")
    (src / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {
        "a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}}))
    assert weights.folder_problems(str(src)) == [
        "shards listed in model.safetensors.index.json missing: model-00002-of-00002.safetensors"]


@pytest.mark.parametrize("hostile", ["../../x.json", "/etc/cron.d/x.json", "sub/../../x.json", "a\\..\\x.json"])
def test_a_hub_file_name_that_leaves_the_model_folder_is_refused(hub_root, tmp_path, monkeypatch, hostile):
    """The issue's: a mirror lists "../../x.json", which *.json matches; joined to the model folder it would be
    deleted and written outside it."""
    import fakehub

    real_info = fakehub.Repo.info

    def info(self):
        out = real_info(self)
        out["siblings"].append({"rfilename": hostile, "size": 2, "blobId": "0" * 40})
        return out

    monkeypatch.setattr(fakehub.Repo, "info", info)
    dest = tmp_path / "models" / "tiny"
    with FakeHub(str(hub_root)) as hub:
        with pytest.raises(weights.WeightsError) as err:
            weights.plan(_spec(dest, hub.url))
    assert err.value.field == "repo" and repr(hostile) in str(err.value)
    assert "names files that would land outside the model folder" in str(err.value)
    assert not dest.exists() and sorted(os.listdir(tmp_path)) == ["hub"]
