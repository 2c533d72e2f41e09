"""Parse the table that ``npu-smi info`` prints, by its header's column names.

Plain Python, no Ansible import: the ``npu_preflight`` module wraps it and pytest tests it directly.
``python -m ascend_grpo.container.npu_smi [FILE]`` prints the parsed table as JSON (stdin when no FILE).

The layout (npu-smi 23.x/24.x, 910B)::

    | NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|
    | Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |
    +===========================+===============+====================================================+
    | 0     910B3               | OK            | 95.7        36                0    / 0             |
    | 0                         | 0000:C1:00.0  | 0           0    / 0          3161 / 65536         |

Newer releases (25.x) add a ``Device`` column after ``Chip``; 310-series cards have no HBM column and may have
several chip lines per card. Widths differ between releases, so cells are split on ``|`` and matched to the
column names of the header cell above them, never by character position.
"""

import json
import re
import sys

HEALTH_STATES = ("OK", "Warning", "Alarm", "Critical")

# Column name in the header -> (key in the parsed card, kind). "pair" values look like "3161 / 65536".
_COLUMNS = {
    "NPU": ("npu", "int"),
    "Name": ("name", "str"),
    "Health": ("health", "str"),
    "Power(W)": ("power_w", "float"),
    "Temp(C)": ("temp_c", "float"),
    "Hugepages-Usage(page)": ("hugepages", "pair"),
    "Chip": ("chip", "int"),
    "Device": ("device", "int"),
    "Phy-ID": ("phy_id", "int"),
    "Bus-Id": ("bus_id", "str"),
    "AICore(%)": ("aicore_pct", "float"),
    "Memory-Usage(MB)": ("memory_mb", "pair"),
    "HBM-Usage(MB)": ("hbm_mb", "pair"),
}

_RULE = re.compile(r"^\+[-=+]+\+?\s*$")
_PAIR = re.compile(r"(\S+)\s*/\s*(\S+)")
_NO_PROCESS = re.compile(r"No running processes found in NPU\s+(\d+)", re.I)


class NpuSmiParseError(ValueError):
    """The text is not an ``npu-smi info`` table this parser understands."""


def _cells(line):
    """``| a | b |`` -> ["a", "b"] (outer bars dropped, cells stripped)."""
    line = line.strip()
    if not line.startswith("|"):
        return None
    parts = line.strip("|").split("|")
    return [p.strip() for p in parts]


def _number(text, kind, line_no):
    if text in ("-", "NA", "N/A", ""):
        return None
    try:
        return int(text) if kind == "int" else float(text)
    except ValueError:
        raise NpuSmiParseError("line %d: %r is not a number" % (line_no, text)) from None


def _values(header_cell, value_cell, line_no):
    """Match one value cell to the column names of its header cell."""
    names = header_cell.split()
    tokens = []
    rest = value_cell
    while rest:
        rest = rest.lstrip()
        if not rest:
            break
        pair = _PAIR.match(rest)
        if pair:
            tokens.append((pair.group(1), pair.group(2)))
            rest = rest[pair.end():]
            continue
        token = rest.split(None, 1)
        tokens.append(token[0])
        rest = token[1] if len(token) > 1 else ""
    if len(tokens) != len(names):
        raise NpuSmiParseError(
            "line %d: %d values %r under %d columns %r" % (line_no, len(tokens), value_cell, len(names), names)
        )
    out = {}
    for name, token in zip(names, tokens):
        key, kind = _COLUMNS.get(name, (re.sub(r"\W+", "_", name).strip("_").lower(), "str"))
        if kind == "pair":
            if not isinstance(token, tuple):
                raise NpuSmiParseError("line %d: %s expects 'used / total', got %r" % (line_no, name, token))
            out[key + "_used"] = _number(token[0], "int", line_no)
            out[key + "_total"] = _number(token[1], "int", line_no)
        else:
            if isinstance(token, tuple):
                token = "%s / %s" % token
            out[key] = token if kind == "str" else _number(token, kind, line_no)
    return out


def _row(headers, cells, line_no):
    if len(cells) != len(headers):
        raise NpuSmiParseError("line %d: %d cells, the header has %d" % (line_no, len(cells), len(headers)))
    row = {}
    for header_cell, value_cell in zip(headers, cells):
        row.update(_values(header_cell, value_cell, line_no))
    return row


def parse(text):
    """Parse ``npu-smi info`` output into ``{"version", "cards", "processes"}``.

    Each card: npu, name, health, power_w, temp_c, hugepages_used/_total, then the first chip's chip, bus_id,
    aicore_pct, memory_mb_used/_total, hbm_mb_used/_total (absent columns are absent keys) and ``chips`` with
    every chip line. ``processes``: {npu, chip, pid, name, memory_mb}; ``idle_npus``: cards reported idle.
    """
    lines = text.splitlines()
    version = None
    card_header = chip_header = proc_header = None
    cards, processes, idle = [], [], []
    section = None  # "cards" or "processes"
    block = []

    def flush():
        if section == "cards" and block:
            first_no, first = block[0]
            card = _row(card_header, first, first_no)
            chips = [_row(chip_header, cells, no) for no, cells in block[1:]]
            if not chips:
                raise NpuSmiParseError("line %d: card %s has no chip line" % (first_no, card.get("npu")))
            for key, value in chips[0].items():
                card.setdefault(key, value)
            card["chips"] = chips
            cards.append(card)
        block.clear()

    for no, raw in enumerate(lines, 1):
        if _RULE.match(raw.strip()):
            flush()
            continue
        cells = _cells(raw)
        if cells is None or not any(cells):
            continue
        first = cells[0]
        if version is None and first.startswith("npu-smi"):
            version = first.split()[1] if len(first.split()) > 1 else None
            continue
        words = first.split()
        if words[:1] == ["NPU"] and len(cells) > 1 and cells[1].startswith("Health"):
            card_header, section = cells, "cards"
            continue
        if words[:1] == ["Chip"] and section == "cards" and not cards and not block:
            chip_header = cells
            continue
        if words[:1] == ["NPU"] and len(cells) > 1 and cells[1].startswith("Process id"):
            flush()
            proc_header, section = cells, "processes"
            continue
        if section == "cards":
            if card_header is None or chip_header is None:
                raise NpuSmiParseError("line %d: card data before the column headers" % no)
            block.append((no, cells))
        elif section == "processes":
            idle_match = _NO_PROCESS.search(raw)
            if idle_match:
                idle.append(int(idle_match.group(1)))
                continue
            if len(cells) != len(proc_header):
                raise NpuSmiParseError("line %d: process row with %d cells" % (no, len(cells)))
            npu_chip = cells[0].split()
            processes.append({
                "npu": _number(npu_chip[0], "int", no),
                "chip": _number(npu_chip[1], "int", no) if len(npu_chip) > 1 else None,
                "pid": _number(cells[1], "int", no),
                "name": cells[2],
                "memory_mb": _number(cells[3], "int", no),
            })
    flush()
    if card_header is None:
        raise NpuSmiParseError("no 'NPU ... | Health' header: not npu-smi info output")
    if not cards:
        raise NpuSmiParseError("the table lists no card")
    return {"version": version, "cards": cards, "processes": processes, "idle_npus": idle}


def check_cards(parsed, wanted):
    """Problems with the wanted card numbers: absent from the table, or not healthy. [] when all is well. The
    cards are named as ``{cards}`` (the caller names the setting: npu_container_visible_devices)."""
    by_id = {card["npu"]: card for card in parsed["cards"]}
    problems = []
    for npu in wanted:
        card = by_id.get(npu)
        if card is None:
            problems.append(
                "npu-smi lists no card %d (it lists %s): set {cards} to cards that exist"
                % (npu, sorted(by_id) or "none")
            )
        elif card.get("health") != "OK":
            problems.append(
                "card %d (%s) reports health %s: check 'npu-smi info -t health -i %d', clear the alarm or reset "
                "the card, or leave it out of {cards}" % (npu, card.get("name"),
                                                                                card.get("health"), npu)
            )
    return problems


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    text = open(argv[0], encoding="utf-8").read() if argv else sys.stdin.read()
    try:
        print(json.dumps(parse(text), indent=2))
    except NpuSmiParseError as err:
        print("npu-smi parse error: %s" % err, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
