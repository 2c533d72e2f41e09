"""pytest's hooks and fixtures; what the tests share as plain functions and paths is in tests/grpo_testkit."""

import os

import pytest

from grpo_testkit import ROOT, VERL_TARBALL, need_verl_tarball, playbook  # noqa: F401


# The tests' two folders and the marks that say which a test belongs in (pytest.ini describes both marks).
UNIT = os.path.join(ROOT, "tests", "unit")
INTEGRATION = os.path.join(ROOT, "tests", "integration")
FOLDER_MARKS = ("integration", "network")


def pytest_collection_modifyitems(session, config, items):
    """The folders and the marks agree: tests/unit holds every test that needs neither Docker nor the network
    (``make check`` runs that folder alone), tests/integration only tests marked ``integration`` or ``network``
    (each file marks its own tests: the folder applies no mark)."""
    wrong = []
    for item in items:
        path = str(item.path)
        if not path.startswith(os.path.join(ROOT, "tests") + os.sep):
            continue
        marks = [name for name in FOLDER_MARKS if item.get_closest_marker(name)]
        if path.startswith(UNIT + os.sep) and marks:
            wrong.append("%s is marked %s: move it to tests/integration" % (item.nodeid, " and ".join(marks)))
        elif path.startswith(INTEGRATION + os.sep) and not marks:
            wrong.append("%s is marked neither integration nor network: mark it, or move it to tests/unit"
                         % item.nodeid)
        elif not path.startswith((UNIT + os.sep, INTEGRATION + os.sep)):
            wrong.append("%s is in neither tests/unit nor tests/integration" % item.nodeid)
    if not wrong:
        return
    message = "tests in the wrong folder for their marks:\n  " + "\n  ".join(wrong)
    if hasattr(config, "workerinput"):
        # a pytest-xdist worker (make check): an error raised here would reach the controller without its message;
        # this one runs nothing and ends the run with the message instead
        session.shouldfail = message
        items[:] = []
        return
    raise pytest.UsageError(message)


@pytest.fixture(scope="session")
def upstream_634(tmp_path_factory):
    """verl@634bd935 (the tarball named by GRPO_VERL_TARBALL) unpacked once, for reading only: the folder holding
    verl/. Copy it (the ``verl634`` fixture) to change anything."""
    import tarfile

    need_verl_tarball()
    where = tmp_path_factory.mktemp("upstream")
    with tarfile.open(VERL_TARBALL) as archive:
        archive.extractall(where, filter="tar")  # permission bits as stored ("data" would clear group write)
    return os.path.join(str(where), "verl-634bd935")


@pytest.fixture
def verl634(upstream_634, tmp_path):
    """A private copy of verl@634bd935's real tree, to patch and to drift."""
    import shutil

    return shutil.copytree(upstream_634, str(tmp_path / "verl-634bd935"))


@pytest.fixture(scope="session")
def sim_host():
    """Build (or reuse) the simulated host, as `make demo` does."""
    result = playbook("playbooks/sim_host.yml", "-i", "inventories/sim")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
