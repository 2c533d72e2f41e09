import json
import os
import subprocess
import sys

import pytest
from grpo_testkit import FIXTURES, ROOT

from ascend_grpo.container import npu_smi


def fixture(name):
    with open(os.path.join(FIXTURES, "npu_smi", name), encoding="utf-8") as handle:
        return handle.read()


def test_one_card_910b():
    parsed = npu_smi.parse(fixture("910b_1card_23.txt"))
    assert parsed["version"] == "23.0.6"
    assert len(parsed["cards"]) == 1
    card = parsed["cards"][0]
    assert {k: card[k] for k in ("npu", "name", "health", "power_w", "temp_c", "chip", "bus_id", "aicore_pct",
                                 "hbm_mb_used", "hbm_mb_total", "memory_mb_used", "hugepages_total")} == {
        "npu": 0, "name": "910B2C", "health": "OK", "power_w": 95.7, "temp_c": 36.0, "chip": 0,
        "bus_id": "0000:C1:00.0", "aicore_pct": 0.0, "hbm_mb_used": 3161, "hbm_mb_total": 65536,
        "memory_mb_used": 0, "hugepages_total": 0}
    assert parsed["processes"] == []
    assert parsed["idle_npus"] == [0]


def test_eight_cards_with_unhealthy_and_processes():
    parsed = npu_smi.parse(fixture("910b_8card_24.txt"))
    assert [c["npu"] for c in parsed["cards"]] == list(range(8))
    assert [c["health"] for c in parsed["cards"]] == ["OK", "OK", "OK", "Warning", "OK", "OK", "Critical", "OK"]
    assert [c["hbm_mb_used"] for c in parsed["cards"]] == [3398, 41230, 3396, 3397, 52011, 3395, 0, 3399]
    assert [c["aicore_pct"] for c in parsed["cards"]] == [0, 12, 0, 0, 87, 0, 0, 0]
    assert parsed["cards"][7]["bus_id"] == "0000:42:00.0"
    assert parsed["processes"] == [
        {"npu": 1, "chip": 0, "pid": 48213, "name": "python3", "memory_mb": 37812},
        {"npu": 1, "chip": 0, "pid": 48377, "name": "ray::WorkerDict", "memory_mb": 520},
        {"npu": 4, "chip": 0, "pid": 50119, "name": "python3", "memory_mb": 48600},
    ]
    assert parsed["idle_npus"] == [0, 2, 3, 5, 6, 7]
    assert npu_smi.check_cards(parsed, [0, 1]) == []
    problems = npu_smi.check_cards(parsed, [3, 6, 9])
    assert len(problems) == 3
    assert problems[0].startswith("card 3 (910B3) reports health Warning")
    assert problems[1].startswith("card 6 (910B3) reports health Critical")
    assert "leave it out of {cards}" in problems[1]  # the module and the filter name the setting
    assert problems[2].startswith("npu-smi lists no card 9 (it lists [0, 1, 2, 3, 4, 5, 6, 7])")


def test_newer_layout_with_device_column_and_card_not_zero():
    parsed = npu_smi.parse(fixture("910b_1card_25.txt"))
    card = parsed["cards"][0]
    assert (card["npu"], card["chip"], card["device"], card["aicore_pct"], card["hbm_mb_used"]) == (2, 0, 2, 3.0, 4012)
    assert npu_smi.check_cards(parsed, [2]) == []
    assert "no card 0" in npu_smi.check_cards(parsed, [0])[0]


def test_310p_has_no_hbm_and_two_chips():
    card = npu_smi.parse(fixture("310p_1card.txt"))["cards"][0]
    assert card["npu"] == 8 and card["power_w"] is None
    assert "hbm_mb_used" not in card
    assert [(c["chip"], c["memory_mb_used"], c["memory_mb_total"]) for c in card["chips"]] == [
        (0, 1782, 21527), (1, 1510, 21527)]


@pytest.mark.parametrize("text, message", [
    ("", "not npu-smi info output"),
    ("bash: npu-smi: command not found\n", "not npu-smi info output"),
    (fixture("910b_1card_23.txt").replace("| 0                         | 0000:C1:00.0  | 0           0    / 0          3161 / 65536         |\n", ""),
     "has no chip line"),
    (fixture("910b_1card_23.txt").replace("3161 / 65536", "3161"), "expects .used / total."),
    (fixture("910b_1card_23.txt").replace("| 0           0    / 0", "| 0     7     0    / 0"), "4 values .* under 3 columns"),
    (fixture("910b_1card_23.txt").replace("95.7", "hot"), "not a number"),
])
def test_rejects_what_it_cannot_read(text, message):
    with pytest.raises(npu_smi.NpuSmiParseError, match=message):
        npu_smi.parse(text)


def test_cli_prints_json_and_fails_on_garbage(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python_plugins", "module_utils"))
    out = subprocess.run([sys.executable, "-m", "ascend_grpo.container.npu_smi",
                          os.path.join(FIXTURES, "npu_smi", "910b_8card_24.txt")],
                         capture_output=True, text=True, env=env, check=True)
    assert len(json.loads(out.stdout)["cards"]) == 8
    bad = subprocess.run([sys.executable, "-m", "ascend_grpo.container.npu_smi"], input="nothing", capture_output=True,
                         text=True, env=env, check=False)
    assert bad.returncode == 2 and "parse error" in bad.stderr


def test_sim_npu_smi_prints_what_the_parser_reads(tmp_path):
    """The simulated host's npu-smi (rendered as the sim playbook renders it) parses like the real table."""
    jinja2 = pytest.importorskip("jinja2")
    source = open(os.path.join(ROOT, "templates", "sim", "npu-smi.j2"), encoding="utf-8").read()
    env = jinja2.Environment()
    env.filters["to_json"] = json.dumps
    script = tmp_path / "npu-smi"
    script.write_text(env.from_string(source).render(ansible_managed="test", sim_host_cards=[0, 1, 5],
                                                     sim_host_unhealthy_cards=[5]))
    out = subprocess.run([sys.executable, str(script), "info"], capture_output=True, text=True, check=True).stdout
    parsed = npu_smi.parse(out)
    assert [(c["npu"], c["health"], c["hbm_mb_total"]) for c in parsed["cards"]] == [
        (0, "OK", 65536), (1, "OK", 65536), (5, "Critical", 65536)]
    assert parsed["idle_npus"] == [0, 1, 5]
    assert subprocess.run([sys.executable, str(script), "-v"], capture_output=True, check=False).returncode == 2
    # a busy card (another user's job), as 910b_8card_24.txt shows one: its process and the HBM it holds
    script.write_text(env.from_string(source).render(ansible_managed="test", sim_host_cards=list(range(8)),
                                                     sim_host_unhealthy_cards=[], sim_host_busy_cards=[0]))
    out = subprocess.run([sys.executable, str(script), "info"], capture_output=True, text=True, check=True).stdout
    parsed = npu_smi.parse(out)
    assert [c["npu"] for c in parsed["cards"]] == list(range(8))
    assert [(p["npu"], p["name"]) for p in parsed["processes"]] == [(0, "python3")]
    assert parsed["idle_npus"] == list(range(1, 8))
    assert parsed["cards"][0]["hbm_mb_used"] > 0.8 * 65536 > parsed["cards"][2]["hbm_mb_used"]
