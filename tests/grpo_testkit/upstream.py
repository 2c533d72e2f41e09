"""Upstream files some unit tests read, fetched from the registry once into the tests' cache (GRPO_TEST_CACHE):
verl's wheels, other wheels unpacked, vLLM's sdists. tests/fill_cache.py fills the cache through these same helpers
so that the unit tests reach no network; a test asking for a file missing there still fetches it itself."""

import contextlib
import fcntl
import os
import subprocess
import sys
import zipfile

from grpo_testkit import TEST_CACHE

CACHE = TEST_CACHE
FLASH = "transformers.integrations.npu_flash_attention"
NPU_HELPERS = "verl.workers.engine.fsdp.npu_padding_utils"
# verl 0.5.0's five files that import the four removed names from transformers' npu_flash_attention (DOMAIN.md)
FLASH_FILES_050 = ["verl/workers/actor/dp_actor.py", "verl/workers/fsdp_workers.py",
                   "verl/trainer/fsdp_sft_trainer.py", "verl/workers/critic/dp_critic.py",
                   "verl/workers/engine/fsdp/engine_impl.py"]


def flash_ops(files):
    """The patch profile's operation for each of ``files``: the flash-attention import moved to the NPU helpers."""
    return [{"op": "import_module", "file": f, "from": FLASH, "to": NPU_HELPERS, "count": 1} for f in files]


@contextlib.contextmanager
def cache_filled_once():
    """One process at a time fills the test cache, the others wait and then find it filled (make check runs the
    unit tests in two processes)."""
    os.makedirs(CACHE, exist_ok=True)
    with open(os.path.join(CACHE, ".lock"), "a", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def verl_tree(version, tmp_path):
    """verl==version's wheel from the registry (downloaded once), unpacked into tmp_path."""
    where = os.path.join(CACHE, "verl-%s" % version)
    with cache_filled_once():
        wheels = [f for f in os.listdir(where) if f.endswith(".whl")] if os.path.isdir(where) else []
        if not wheels:
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q", "-d",
                            where, "verl==%s" % version], check=True)
            wheels = [f for f in os.listdir(where) if f.endswith(".whl")]
    with zipfile.ZipFile(os.path.join(where, wheels[0])) as archive:
        archive.extractall(tmp_path)
    return str(tmp_path)


def wheel_tree(name, version):
    """name==version's wheel from the registry, unpacked once into the test cache; returns the folder."""
    where = os.path.join(CACHE, "%s-%s" % (name, version))
    site = os.path.join(where, "site")
    with cache_filled_once():
        if not os.path.isdir(os.path.join(site, name)):
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q", "-d",
                            where, "%s==%s" % (name, version)], check=True)
            wheel = [f for f in os.listdir(where) if f.endswith(".whl")][0]
            with zipfile.ZipFile(os.path.join(where, wheel)) as archive:
                archive.extractall(site)
    return site


def registry_sdist(name, version):
    """An sdist from the registry's simple index (pip cannot fetch vLLM's without building it), sha256-checked,
    unpacked once into the test cache; returns the folder holding the package."""
    import hashlib
    import re
    import tarfile
    import urllib.request

    where = os.path.join(CACHE, "%s-%s-sdist" % (name, version))
    top = os.path.join(where, "%s-%s" % (name, version))
    with cache_filled_once():
        if not os.path.isdir(top):
            index = os.environ.get("GRPO_TEST_INDEX", "https://pypi.org/simple")
            page = urllib.request.urlopen("%s/%s/" % (index, name), timeout=60).read().decode()
            url, digest = re.search(r'href="([^"#]*/%s-%s\.tar\.gz)#sha256=([0-9a-f]+)"' % (name, version),
                                    page).groups()
            data = urllib.request.urlopen(url, timeout=300).read()
            assert hashlib.sha256(data).hexdigest() == digest
            os.makedirs(where, exist_ok=True)
            archive = os.path.join(where, "sdist.tar.gz")
            with open(archive, "wb") as handle:
                handle.write(data)
            with tarfile.open(archive) as tar:
                tar.extractall(where, filter="data")
    return top


def verl_trainer_config(folder):
    """verl@634bd935's trainer configuration alone (verl/trainer/config/, all the check reads), unpacked from the
    tarball GRPO_VERL_TARBALL names into ``folder``: the folder holding verl/."""
    import tarfile

    from grpo_testkit import VERL_TARBALL, need_verl_tarball

    need_verl_tarball()
    with tarfile.open(VERL_TARBALL) as tar:
        members = [m for m in tar.getmembers() if "/verl/trainer/config/" in m.name]
        tar.extractall(folder, members, filter="data")
    return str(next(os.scandir(folder)).path)


def plain_verl_tarball(path):
    """A .tar.gz of a verl tree made without git (so without a commit id, proven by its sha256 only): its path."""
    import io
    import tarfile

    with tarfile.open(path, "w:gz", format=tarfile.GNU_FORMAT) as tar:
        data = b"# verl\n"
        info = tarfile.TarInfo("verl-src/verl/__init__.py")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return str(path)
