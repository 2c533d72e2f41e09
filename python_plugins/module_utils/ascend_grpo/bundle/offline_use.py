"""Where each stage's settings point when the chain takes its input from an offline bundle (grpo_offline_bundle),
and the settings a user set that would take it from elsewhere.

With a bundle, the stages' defaults point into it (the container's read-only mount, ``/grpo-bundle``). A setting the
inventory or ``-e`` gives another value would send that stage to the network (the hub, GitHub, the index) or to a
folder that is not the checked bundle: refused, naming the setting and the fix, before the stage changes anything.
"""

import posixpath

MOUNT = "/grpo-bundle"


def expected(part, mount=MOUNT, verl_commit="", sample=""):
    """{setting: value} a stage needs for ``part`` of the bundle (``sample``: the manifest's path of it)."""
    if part == "wheels":
        return {"deps_pinning_wheelhouse": posixpath.join(mount, "wheels"),
                "grpo_eval_site.wheelhouse": posixpath.join(mount, "wheels")}
    if part == "verl":
        return {"deps_pinning_verl_source": "tarball",
                "deps_pinning_verl_tarball": posixpath.join(mount, "verl", "verl-%s.tar.gz" % verl_commit)}
    if part in ("model", "data"):
        return {"assets_%s_source" % part: "local",
                "assets_%s_local_dir" % part: posixpath.join(mount, part)}
    if part == "sample":
        return {"assets_chat_template_sample_file": posixpath.join(mount, sample) if sample else ""}
    return {}


def setting_problems(parts, values, bundle, verl_commit="", sample="", mount=MOUNT):
    """One sentence per setting in ``values`` (setting -> its value as the stage sees it; a setting the stage does
    not read is left out) that takes a part of ``parts`` from somewhere else than the bundle."""
    problems = []
    for part in parts:
        for setting, want in sorted(expected(part, mount, verl_commit, sample).items()):
            if setting not in values:
                continue
            got = values[setting]
            if str(got if got is not None else "").strip() != want:
                problems.append(
                    "%s is %r, but grpo_offline_bundle (%s) gives the stages their %s: with a bundle it must be %r "
                    "(its default then). Remove %s from the inventory and -e, or unset grpo_offline_bundle to take "
                    "the %s from there instead" % (setting, got, bundle, part, want, setting, part))
    return problems
