"""The npu_preflight module's engine, in-process: the branches its module tests do not reach (no card with the
default fail, a bare npu-smi name looked up, the devices handed to docker run)."""

import pytest

from ascend_grpo.container import host_checks


def bare_host(tmp_path, **extra):
    """A host without device nodes, driver folders or npu-smi; every argument the module passes, at its default."""
    (tmp_path / "dev").mkdir(exist_ok=True)
    p = {"cards": [0], "dev_dir": str(tmp_path / "dev"), "shared_nodes": ["davinci_manager", "devmm_svm", "hisi_hdc"],
         "driver_dir": str(tmp_path / "driver"), "addons_dir": str(tmp_path / "add-ons"),
         "npu_smi": str(tmp_path / "no-npu-smi"), "workspace": str(tmp_path / "ws"), "min_free_gib": 0,
         "min_free_why": "", "docker_root": "", "image_gib": 10, "fail_on_problems": False}
    p.update(extra)
    return p


def never_asked(name, opt_dirs=None):
    raise AssertionError("a path with a slash is run as given, not looked up: %s" % name)


def test_no_card_fails_by_default_with_no_other_problem(tmp_path):
    with pytest.raises(host_checks.HostNotReady) as err:
        host_checks.preflight(bare_host(tmp_path, cards=[], fail_on_problems=True), never_asked)
    assert err.value.msg == "no card requested: set {cards}, e.g. [0]"
    assert err.value.result == {"problems": []}


def test_a_bare_npu_smi_name_is_looked_up_where_the_driver_installs_it(tmp_path):
    asked = []

    def which(name, opt_dirs=None):
        asked.append((name, opt_dirs))
        return str(tmp_path / "sbin" / name)
    found = host_checks.preflight(bare_host(tmp_path, npu_smi="npu-smi"), which)
    assert asked == [("npu-smi", ["/usr/local/sbin", "/usr/local/bin"])]
    assert found["npu_smi_path"] == str(tmp_path / "sbin" / "npu-smi")


def test_a_name_not_found_is_run_as_given(tmp_path):
    found = host_checks.preflight(bare_host(tmp_path, npu_smi="npu-smi"), lambda name, opt_dirs=None: None)
    assert found["npu_smi_path"] == "npu-smi"


def test_the_devices_for_docker_run_are_the_cards_and_the_three_shared_nodes(tmp_path):
    """The guide's docker run: --device=/dev/davinci0 --device=/dev/davinci_manager --device=/dev/devmm_svm
    --device=/dev/hisi_hdc, each mapped to the same name under the container's /dev."""
    found = host_checks.preflight(bare_host(tmp_path), never_asked)
    dev = tmp_path / "dev"
    assert found["docker_devices"] == ["%s/%s:/dev/%s" % (dev, name, name)
                                       for name in ("davinci0", "davinci_manager", "devmm_svm", "hisi_hdc")]
    assert found["changed"] is False and found["npu_smi"] is None and found["cards"] == []
