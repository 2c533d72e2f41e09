"""Print, as JSON, what a TensorBoard log folder holds, read with TensorBoard's own reader (EventAccumulator):
{"files": [event file names], "scalars": {tag: [[step, value], ...]}} over every event file under the folder.

Usage: python read_tensorboard.py FOLDER (runs in the training stack's Python, which has tensorboard)."""

import json
import os
import sys

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

folder = sys.argv[1]
files = sorted(name for name in os.listdir(folder) if name.startswith("events.out.tfevents."))
scalars = {}
for name in files:  # one file per launch (SummaryWriter opens a new one each time)
    accumulator = EventAccumulator(os.path.join(folder, name), size_guidance={"scalars": 0})
    accumulator.Reload()
    for tag in accumulator.Tags()["scalars"]:
        scalars.setdefault(tag, []).extend([event.step, event.value] for event in accumulator.Scalars(tag))
print(json.dumps({"files": files, "scalars": {tag: sorted(points) for tag, points in scalars.items()}}))
