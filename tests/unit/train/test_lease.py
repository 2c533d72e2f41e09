"""The instance's lease (grpo_train_lease_end, grpo_train_lease_margin): the setting read, the run's environment and
overrides, the refusals, the status line and the doctor's row (ascend_grpo.train.lease, its filters and run_log).

The references are verl's at the guide's commit (verl/utils/checkpoint/checkpoint_manager.py should_save_ckpt_esi,
verl/trainer/ppo/ray_trainer.py fit, verl/trainer/config/ppo_trainer.yaml), transcribed here and checked against
its source where the tree is at hand."""

import datetime
import os
import re

import pytest

from ascend_grpo.common import settings
from ascend_grpo.train import lease, overrides, run_log, run_status, status_view

import train_filters  # noqa: E402

# transcribed from verl@634bd935
VERL_ENV = "MLP_CURRENT_CAPACITY_BLOCK_EXPIRATION_TIMESTAMP"
VERL_MESSAGE = "Force saving checkpoint: ESI instance expiration approaching."
VERL_MARGIN = "esi_redundant_time"
NOW = 1896253200  # 2030-02-02 09:00:00 UTC


def test_the_references_are_verls(upstream_634):
    def read(*parts):
        with open(os.path.join(upstream_634, *parts), encoding="utf-8") as handle:
            return handle.read()
    manager = read("verl", "utils", "checkpoint", "checkpoint_manager.py")
    assert 'os.getenv("%s")' % VERL_ENV in manager
    assert "save_ckpt_duration: float = 60" in manager
    trainer = read("verl", "trainer", "ppo", "ray_trainer.py")
    assert 'print("%s")' % VERL_MESSAGE in trainer
    assert "redundant_time=self.config.trainer.%s" % VERL_MARGIN in trainer
    assert re.search(r"self\.config\.trainer\.save_freq > 0 and \(", trainer)
    assert re.search(r"^  %s: 0$" % VERL_MARGIN, read("verl", "trainer", "config", "ppo_trainer.yaml"), re.M)


def test_ours_match_verls():
    assert lease.ENV == VERL_ENV
    assert run_log.FORCE_SAVE == VERL_MESSAGE
    assert lease.MARGIN_KEY == "trainer." + VERL_MARGIN
    assert lease.SAVE_S == 60


# --- the setting -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("value, kind, end, seconds", [
    ("2030-02-02T17:00:00+08:00", "absolute", NOW, None),
    ("2030-02-02T09:00:00Z", "absolute", NOW, None),
    ("2030-02-02 09:00:00+00:00", "absolute", NOW, None),
    (datetime.datetime(2030, 2, 2, 9, 0, tzinfo=datetime.timezone.utc), "absolute", NOW, None),
    ("1896253200", "epoch", NOW, None),
    (1896253200, "epoch", NOW, None),
    ("8h", "duration", None, 8 * 3600),
    ("90m", "duration", None, 5400),
    ("3600s", "duration", None, 3600),
    ("1h30m", "duration", None, 5400),
    ("2d", "duration", None, 2 * 86400),
])
def test_the_forms_of_the_setting(value, kind, end, seconds):
    assert lease.parse(value) == {"kind": kind, "end": end, "seconds": seconds}


@pytest.mark.parametrize("value", ["", None])
def test_empty_is_no_lease(value):
    assert lease.parse(value) is None
    assert lease.resolve(value, 300, now=NOW) == {}
    assert lease.layers({}) == {"env": {}, "overrides": {}}


@pytest.mark.parametrize("value, words", [
    ("soon", "is not a lease end"),
    ("8 hours", "is not a lease end"),
    ("-5m", "is not a lease end"),
    ("0s", "duration of 0"),
    ("2030-02-02T09:00:00", "has no zone"),
    ("8h\n", "is not a lease end"),
    (" 8h", "is not a lease end"),
    (True, "is not a lease end"),
])
def test_bad_values_are_refused_naming_the_setting(value, words):
    problems = settings.problems([["lease?", "grpo_train_lease_end", value]])
    assert len(problems) == 1 and problems[0].startswith("grpo_train_lease_end (") and words in problems[0]


def test_the_settings_declare_their_checks():
    spec = {"argument_specs": {"main": {"options": {
        "grpo_train_lease_end": {"type": "str", "description": ["When it ends.", "Check: lease?."]},
        "grpo_train_lease_margin": {"type": "int", "description": "Seconds. Check: count."}}}}}
    found = settings.check_settings(spec, {"grpo_train_lease_end": "tomorrow", "grpo_train_lease_margin": -1})
    assert sorted(problem["field"] for problem in found) == ["grpo_train_lease_end", "grpo_train_lease_margin"]
    assert settings.check_settings(spec, {"grpo_train_lease_end": "", "grpo_train_lease_margin": 0}) == []


# --- resolving: a duration counts from the launch, and a rerun under the same lease keeps its end ----------------

def test_an_absolute_end_is_itself():
    assert lease.resolve("2030-02-02T09:00:00Z", 120, now=NOW - 100) == {
        "setting": "2030-02-02T09:00:00Z", "kind": "absolute", "margin": 120, "resolved_at": NOW - 100, "end": NOW}


def test_a_duration_counts_from_now_and_is_kept_while_it_holds():
    first = lease.resolve("2h", 300, last={}, now=NOW)
    assert first["end"] == NOW + 7200 and first["resolved_at"] == NOW
    # a later pass under the same lease (the launch recorded it) keeps its end: the same script
    assert lease.resolve("2h", 300, last=first, now=NOW + 600)["end"] == NOW + 7200
    # another duration, or the same once its end passed (a new instance): from now
    assert lease.resolve("3h", 300, last=first, now=NOW + 600)["end"] == NOW + 600 + 3 * 3600
    assert lease.resolve("2h", 300, last=first, now=NOW + 7200)["end"] == NOW + 7200 + 7200


# --- the run's environment and overrides, and the refusals -------------------------------------------------------

def test_the_run_gets_the_end_and_the_margin():
    resolved = lease.resolve("1896253200", 240, now=NOW - 3600)
    got = train_filters.train_lease_layers(resolved, False)
    assert got == {"env": {VERL_ENV: "1896253200"}, "overrides": {"trainer": {VERL_MARGIN: 240}}}
    assert "trainer.%s=240" % VERL_MARGIN in overrides.render_overrides({"trainer": {"save_freq": 70}},
                                                                         got["overrides"])


def test_several_hosts_get_it_through_the_jobs_runtime_environment():
    # the workers of a node whose Ray the cluster stage started earlier read the job's runtime_env env_vars, which
    # Ray wants as strings: the end is written quoted
    got = train_filters.train_lease_layers(lease.resolve("1896253200", 0, now=NOW - 60), True)
    words = overrides.render_overrides(got["overrides"])
    assert "+ray_kwargs.ray_init.runtime_env.env_vars.%s='1896253200'" % VERL_ENV in words


def test_a_lease_that_fits_is_taken():
    resolved = lease.resolve("8h", 300, now=NOW)
    assert train_filters.train_lease_problems(resolved, {}, {}, {"trainer.save_freq": 70}, now=NOW) == []


def test_a_lease_that_ended_is_refused():
    resolved = lease.resolve("2030-02-02T09:00:00Z", 300, now=NOW + 60)
    (problem,) = train_filters.train_lease_problems(resolved, {}, {}, {"trainer.save_freq": 70}, now=NOW + 60)
    assert problem.startswith("grpo_train_lease_end (2030-02-02T09:00:00Z) ended at 2030-02-02 09:00:00 UTC")


def test_the_users_own_variable_is_a_conflict_naming_both():
    resolved = lease.resolve("8h", 300, now=NOW)
    (problem,) = train_filters.train_lease_problems(resolved, {VERL_ENV: "1896253200"}, {},
                                                    {"trainer.save_freq": 70}, now=NOW)
    assert "grpo_train_env sets %s" % VERL_ENV in problem and "grpo_train_lease_end" in problem


@pytest.mark.parametrize("user", [
    {"trainer": {VERL_MARGIN: 600}},
    {"+ray_kwargs": {"ray_init": {"runtime_env": {"env_vars": {VERL_ENV: "1"}}}}},
])
def test_the_users_own_override_is_a_conflict_naming_both(user):
    resolved = lease.resolve("8h", 300, now=NOW)
    (problem,) = train_filters.train_lease_problems(resolved, {}, user, {"trainer.save_freq": 70}, now=NOW)
    assert problem.startswith("grpo_train_overrides sets ") and "grpo_train_lease_margin" in problem


@pytest.mark.parametrize("save_freq", [-1, 0, None])
def test_a_run_that_never_saves_is_refused_naming_the_override(save_freq):
    resolved = lease.resolve("8h", 300, now=NOW)
    run = {"trainer.save_freq": save_freq} if save_freq is not None else {}
    (problem,) = train_filters.train_lease_problems(resolved, {}, {}, run, now=NOW)
    assert "trainer.save_freq=%s" % save_freq in problem
    assert "grpo_train_overrides {trainer: {save_freq: N}}" in problem


# --- the status: from verl's log -----------------------------------------------------------------------------------

# A log as verl writes it through Ray (TaskRunner's prints): step 3 inside the window, so its save is forced
LOG = """\
(TaskRunner pid=4242) Total training steps: 6
(TaskRunner pid=4242) step:1 - training/global_step:1 - timing_s/step:10.0 - critic/score/mean:0.1
(TaskRunner pid=4242) step:2 - training/global_step:2 - timing_s/step:12.0 - critic/score/mean:0.2
(TaskRunner pid=4242) Force saving checkpoint: ESI instance expiration approaching.
(TaskRunner pid=4242) local_global_step_folder: /data/grpo/checkpoints/p/e/global_step_3
(TaskRunner pid=4242) step:3 - training/global_step:3 - timing_s/step:14.0 - critic/score/mean:0.3
"""


def test_the_log_names_the_step_the_lease_saved_at():
    parsed = run_log.parse(LOG)
    assert parsed["lease_saves"] == [3]
    assert parsed["checkpoints_saved"] == [3]
    assert run_log.parse(LOG.replace("Force saving", "Saving"))["lease_saves"] == []


def test_a_log_that_ends_inside_the_forced_save_names_the_next_step():
    cut = LOG.split("(TaskRunner pid=4242) local_global_step_folder")[0]
    assert run_log.parse(cut)["lease_saves"] == [3]


def test_every_launchs_lease_saves_are_kept():
    first = run_log.parse(LOG)
    second = run_log.parse("Load from checkpoint folder: /c/global_step_3\n"
                           "step:4 - timing_s/step:9.0\n" + VERL_MESSAGE + "\n"
                           "local_global_step_folder: /c/global_step_5\nstep:5 - timing_s/step:9.0\n")
    assert run_log.merge([first, second])["lease_saves"] == [3, 5]


def test_the_status_line():
    resolved = lease.resolve("2030-02-02T09:00:00Z", 300, now=NOW - 7200)
    got = lease.status(resolved, now=NOW - 5400, eta_s=1200, saves=[3])
    assert got["left_s"] == 5400 and got["fits"] is True
    assert got["line"].startswith("ends 2030-02-02 09:00:00 UTC (")
    assert "1:30:00 left; the run's ETA 0:20:00 fits; lease save at step 3" in got["line"]
    late = lease.status(resolved, now=NOW - 600, eta_s=1200)
    assert late["fits"] is False and "does not fit" in late["line"]
    assert "ended 0:01:00 ago" in lease.status(resolved, now=NOW + 60)["line"]
    assert lease.status({}) is None


def test_the_status_reads_the_launchs_lease_and_the_log(tmp_path):
    run_dir, jobs_dir = tmp_path / "run", tmp_path / "jobs"
    (run_dir / "logs").mkdir(parents=True)
    jobs_dir.mkdir()
    (run_dir / "logs" / "grpo-20300202-070000.log").write_text(LOG)
    os.symlink("grpo-20300202-070000.log", str(run_dir / "logs" / "latest.log"))
    end = int(datetime.datetime.now(datetime.timezone.utc).timestamp()) + 3600
    (run_dir / ".launch.json").write_text('{"lease": {"setting": "1h", "kind": "duration", "margin": 300, '
                                          '"resolved_at": 0, "end": %d}}' % end)
    result, _ = run_status.look({"run_dir": str(run_dir), "state_dir": str(jobs_dir), "job": "train",
                                 "checkpoint_dir": str(tmp_path / "ckpt"), "tensorboard_dir": "", "triage": None})
    assert result["lease"]["saves"] == [3] and result["lease"]["end"] == end
    table = status_view.render_table([dict(result["summary"], host="npu-a", lease=result["lease"])])
    (line,) = [line for line in table.splitlines() if line.startswith("    lease: ")]
    assert "lease save at step 3" in line
    # the status tasks' own path: the module's report through the table filter
    table = train_filters.train_status_table([dict(result, host="npu-a")])
    assert [line for line in table.splitlines() if line.startswith("    lease: ")] == [line]


# --- the doctor ----------------------------------------------------------------------------------------------------

def test_the_doctor_warns_when_the_run_cannot_finish_naming_the_settings():
    resolved = lease.resolve("1h", 300, now=NOW)
    before = {"step": 10, "total_steps": 100, "summary": {"eta_s": 90 * 60.0}}
    (line, fix) = train_filters.train_lease_doctor(resolved, before, None, now=NOW)
    assert line.startswith("warn  the lease (%s) ends " % VERL_ENV)
    assert "90 steps x 60 s (measured) + 60 s save = 1:31:00" in line
    assert "grpo_train_lease_end" in fix and "trainer.total_training_steps" in fix


def test_the_doctor_passes_a_run_that_fits():
    resolved = lease.resolve("8h", 300, now=NOW)
    (line,) = train_filters.train_lease_doctor(resolved, {"step": 10, "total_steps": 100,
                                                          "summary": {"eta_s": 90 * 60.0}}, None, now=NOW)
    assert line.startswith("pass  the lease") and "the run fits" in line


def test_the_doctor_states_its_estimate_before_any_step():
    resolved = lease.resolve("1h", 300, now=NOW)
    (line, _fix) = train_filters.train_lease_doctor(resolved, {"step": 0, "summary": {}}, 145, now=NOW)
    assert "145 steps x %d s (an estimate: no step logged yet)" % lease.ESTIMATED_STEP_S in line
    (unknown,) = train_filters.train_lease_doctor(resolved, {}, None, now=NOW)
    assert unknown.startswith("pass ") and "not known" in unknown


def test_no_lease_no_row():
    assert train_filters.train_lease_doctor({}, {"step": 1}, 10) == []
