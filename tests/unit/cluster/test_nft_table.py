"""The ray_firewall module's engine (ascend_grpo.cluster.nft_table), in-process, against a fake nft: what the
module documents (load the table when it differs, nothing when it holds, remove it, report in check mode, name
the missing tool) without root, a network namespace or an ansible process."""
import pytest

from ascend_grpo.cluster import firewall, nft_table

MEMBERS = ["10.0.0.12", "10.0.0.11"]


class FakeNft(object):
    """nft with one table: ``list table`` prints what the last ``-f -`` script loaded (the rules' comment, which
    holds the fingerprint, and the members' addresses are in it, as in nft's own listing); ``delete table``
    removes it, and what follows it in the script is the new table. Records every argv and what came on standard
    input."""

    def __init__(self, listing=""):
        self.listing, self.calls = listing, []

    def __call__(self, argv, data=None, binary_data=False):
        self.calls.append((list(argv), data))
        if argv[-4:-1] == ["list", "table", "inet"]:
            if not self.listing:
                return 1, "", "Error: No such file or directory; did you mean table 'filter' in family ip?"
            return 0, self.listing, ""
        if argv[-2:] == ["-f", "-"]:
            # a script deletes the table first (firewall.removal; ruleset, to replace it atomically): what follows the
            # last deletion is the table now
            self.listing = data.rpartition("delete table inet %s\n" % firewall.TABLE)[2].strip()
            return 0, "", ""
        return 1, "", "unexpected: %s" % argv


def _params(**changes):
    params = dict(state="present", ports=["6379", "10002-19999"], members=MEMBERS, one_host=False, ephemeral=False,
                  pid=None, table=firewall.TABLE, nft="nft", nsenter="nsenter")
    params.update(changes)
    return params


def _everywhere(tool):
    return "/usr/sbin/" + tool


def test_present_loads_the_table_once_then_changes_nothing():
    nft = FakeNft()
    first = nft_table.converge(_params(), False, nft, which=_everywhere)
    assert first["changed"] is True and first["members"] == ["10.0.0.11", "10.0.0.12"]
    assert first["diff"]["before"] == "" and first["diff"]["after_header"] == "table inet grpo_ray"
    loads = [data for argv, data in nft.calls if argv[-2:] == ["-f", "-"]]
    assert len(loads) == 1 and "10.0.0.11" in loads[0] and "10.0.0.12" in loads[0]
    again = nft_table.converge(_params(), False, nft, which=_everywhere)
    assert again["changed"] is False and again["fingerprint"] == first["fingerprint"]
    assert len([1 for argv, _ in nft.calls if argv[-2:] == ["-f", "-"]]) == 1


def test_check_mode_reports_the_change_and_loads_nothing():
    nft = FakeNft()
    checked = nft_table.converge(_params(), True, nft, which=_everywhere)
    assert checked["changed"] is True and nft.listing == ""
    assert [argv[-2:] for argv, _ in nft.calls] == [["inet", "grpo_ray"]]  # only the listing was read


def test_absent_removes_the_table_and_a_host_without_nft_has_none():
    nft = FakeNft()
    nft_table.converge(_params(), False, nft, which=_everywhere)
    gone = nft_table.converge(_params(state="absent"), False, nft, which=_everywhere)
    assert gone["changed"] is True and gone["diff"]["after"] == "" and nft.listing == ""
    assert nft_table.converge(_params(state="absent"), False, nft, which=_everywhere)["changed"] is False
    assert nft_table.converge(_params(state="absent"), False, FakeNft(), which=lambda tool: None) == \
        {"changed": False, "before": "", "fingerprint": ""}


def test_a_namespace_is_entered_with_nsenter_and_a_missing_tool_is_named():
    nft = FakeNft()
    nft_table.converge(_params(pid=4242, state="check"), False, nft, which=_everywhere)
    assert nft.calls[0][0][:3] == ["nsenter", "--net=/proc/4242/ns/net", "--"]
    with pytest.raises(nft_table.NftError, match="nsenter is not on this host.*install util-linux"):
        nft_table.converge(_params(pid=4242), False, nft, which=lambda tool: None if tool == "nsenter" else tool)
    with pytest.raises(nft_table.NftError, match="nft is not on this host.*apt-get install nftables"):
        nft_table.converge(_params(), False, nft, which=lambda tool: None)


def test_a_refused_load_fails_with_what_was_found():
    def refusing(argv, data=None, binary_data=False):
        if argv[-2:] == ["-f", "-"]:
            return 1, "", "Error: Could not process rule: Operation not permitted"
        return 1, "", "Error: No such file or directory"
    with pytest.raises(nft_table.NftError, match="nft refused the rules in this host: .*Operation not permitted") \
            as err:
        nft_table.converge(_params(), False, refusing, which=_everywhere)
    assert err.value.result["before"] == "" and err.value.result["members"] == ["10.0.0.11", "10.0.0.12"]
