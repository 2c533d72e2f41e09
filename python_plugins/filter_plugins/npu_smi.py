"""Filters: ``npu-smi info`` text -> parsed table, for tasks that read npu-smi from inside a container; the cards'
numbers as the CANN runtime of a training environment counts them."""


from ansible.errors import AnsibleFilterError

from ascend_grpo import host_checks, npu_smi


def npu_smi_info(text):
    """``{{ result.stdout | npu_smi_info }}`` -> {version, cards, processes, idle_npus}."""
    try:
        return npu_smi.parse(text)
    except npu_smi.NpuSmiParseError as err:
        raise AnsibleFilterError("npu_smi_info: %s" % err) from err


def npu_smi_problems(text, cards):
    """``{{ stdout | npu_smi_problems([0]) }}`` -> problems with those cards ([] when all are present and OK)."""
    return npu_smi.check_cards(npu_smi_info(text), cards)


def npu_runtime_ids(cards, mode="docker"):
    """``{{ npu_container_visible_devices | npu_runtime_ids(npu_container_mode) }}`` -> the ids
    ASCEND_RT_VISIBLE_DEVICES takes for those host cards: 0..n-1 in a container (mode docker), the host's numbers
    on the host itself (mode none)."""
    try:
        return host_checks.runtime_ids(cards, mode == "docker")
    except (TypeError, ValueError) as err:
        raise AnsibleFilterError("npu_runtime_ids: %s" % err) from err


class FilterModule:
    def filters(self):
        return {"npu_smi_info": npu_smi_info, "npu_smi_problems": npu_smi_problems, "npu_runtime_ids": npu_runtime_ids}
