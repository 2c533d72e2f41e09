"""Filters: ``npu-smi info`` text -> parsed table, for tasks that read npu-smi from inside a container."""


from ansible.errors import AnsibleFilterError

from ascend_grpo import npu_smi


def npu_smi_info(text):
    """``{{ result.stdout | npu_smi_info }}`` -> {version, cards, processes, idle_npus}."""
    try:
        return npu_smi.parse(text)
    except npu_smi.NpuSmiParseError as err:
        raise AnsibleFilterError("npu_smi_info: %s" % err) from err


def npu_smi_problems(text, cards):
    """``{{ stdout | npu_smi_problems([0]) }}`` -> problems with those cards ([] when all are present and OK)."""
    return npu_smi.check_cards(npu_smi_info(text), cards)


class FilterModule:
    def filters(self):
        return {"npu_smi_info": npu_smi_info, "npu_smi_problems": npu_smi_problems}
