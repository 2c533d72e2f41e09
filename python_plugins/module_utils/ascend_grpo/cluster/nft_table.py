"""The cluster stage's nftables table, applied: the ``ray_firewall`` module's work as plain Python.

:mod:`firewall` writes the ruleset; this reads what ``nft`` lists in the namespace where Ray listens, loads ours
when it differs (``nft -f -``), removes it, or only reports. Every command goes through the ``run_command`` the
caller hands over (the module's own: ``nft`` reads its script on standard input, ``data=``); the module turns the
answer into ``exit_json`` and a :class:`NftError` into ``fail_json``.
"""

import re
import shutil

from . import firewall
from ..common.errors import StageFailure

# {firewall}: the ray_firewall module's option that only names the caller's switch for this table
PACKAGE_HINT = ("install nftables on the host (apt-get install nftables, dnf install nftables), or set "
                "{firewall} to false and keep every other machine away from Ray's ports yourself")


class NftError(StageFailure):
    """A refusal or a failed nft: ``msg`` says what and the fix; ``result`` is what was found before it."""


def _nft(p, run_command, args, data=None):
    argv = ([p["nsenter"], "--net=/proc/%d/ns/net" % p["pid"], "--"] if p["pid"] else []) + [p["nft"]] + args
    return run_command(argv, data=data, binary_data=True)


def _current(p, run_command):
    """nft's listing of our table, or "" when it is not there."""
    rc, out, err = _nft(p, run_command, ["list", "table", "inet", p["table"]])
    if rc == 0:
        return out
    if "No such file or directory" in err or "does not exist" in err:
        return ""
    raise NftError("nft cannot read the tables of %s: %s. %s" % (_where(p), err.strip(), PACKAGE_HINT))


def _where(p):
    return "process %d's network namespace" % p["pid"] if p["pid"] else "this host"


def converge(p, check_mode, run_command, which=shutil.which):
    """One call of the ``ray_firewall`` module (``p``: its arguments): the result for ``exit_json``, or NftError.

    ``run_command``: ``module.run_command`` or one with its shape and its ``data``/``binary_data`` (nft's script
    goes on standard input); ``which``: finds a tool on this host's PATH."""
    if p["state"] == "absent" and not which(p["nft"]):
        return dict(changed=False, before="", fingerprint="")  # no nft, so no table of ours
    for tool in ("nft",) + (("nsenter",) if p["pid"] else ()):
        if not which(p[tool]):
            raise NftError("%s is not on this host, and the cluster stage firewalls Ray's ports with it: %s"
                           % (p[tool], PACKAGE_HINT if tool == "nft" else "install util-linux"))
    before = _current(p, run_command)
    found = _fingerprint(before)
    if p["state"] == "check":
        return dict(changed=False, before=before, fingerprint=found)
    if p["state"] == "absent":
        if not before:
            return dict(changed=False, before="", fingerprint="")
        if not check_mode:
            rc, _out, err = _nft(p, run_command, ["-f", "-"], data=firewall.removal(p["table"]))
            if rc != 0:
                raise NftError("nft could not remove table inet %s in %s: %s" % (p["table"], _where(p),
                                                                                  err.strip()))
        return dict(changed=True, before=before, fingerprint=found,
                    diff=dict(before=before, after="", before_header="table inet " + p["table"]))
    try:
        ports = list(p["ports"]) + ([firewall.ephemeral_span(_ephemeral(p, run_command))] if p["ephemeral"] else [])
        wanted = firewall.ruleset(ports, p["members"], p["table"], allow_no_members=p["one_host"])
        members = firewall.members_of(p["members"], allow_none=p["one_host"])
    except firewall.FirewallError as err:
        raise NftError("ray_firewall: %s" % err) from err
    result = dict(fingerprint=wanted["fingerprint"], rules=wanted["rules"], members=members, before=before)
    if found == wanted["fingerprint"] and all(member in before for member in members):
        return dict(changed=False, **result)
    if not check_mode:
        rc, _out, err = _nft(p, run_command, ["-f", "-"], data=wanted["script"])
        if rc != 0:
            raise NftError("nft refused the rules in %s: %s" % (_where(p), err.strip()), result)
        after = _current(p, run_command)
        if _fingerprint(after) != wanted["fingerprint"]:
            raise NftError("the table was loaded in %s, but nft lists it without our rules" % _where(p), result)
    return dict(changed=True, diff=dict(before=before, after=wanted["rules"],
                                        before_header="table inet " + p["table"],
                                        after_header="table inet " + p["table"]), **result)


def _ephemeral(p, run_command):
    """The namespace's ip_local_port_range ("32768\t60999"), read in that namespace (/proc/sys/net is per
    namespace)."""
    argv = ([p["nsenter"], "--net=/proc/%d/ns/net" % p["pid"], "--"] if p["pid"] else []) + \
        ["cat", "/proc/sys/net/ipv4/ip_local_port_range"]
    rc, out, err = run_command(argv)
    if rc != 0:
        raise NftError("cannot read the ephemeral port range of %s: %s" % (_where(p), err.strip()))
    return out.strip()


def _fingerprint(listing):
    found = re.search(r'comment "(grpo-ray [0-9a-f]{16})"', listing or "")
    return found.group(1) if found else ""

