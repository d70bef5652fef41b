#!/usr/bin/env python3
"""job.py DIR [train.py ARGS...]: a PyTorch training job turned on by the wheel's one line, as a
user's script would be: `commlens.enable(DIR)` first, before anything makes a process group;
then examples/verdict/train.py runs as the job (DDP or FSDP, a straggler planted as asked).
Start it with torchrun (examples/gpu_wheel.sh does)."""
import os
import runpy
import sys

import commlens; commlens.enable(sys.argv[1])   # the one line: before the process group is made

TRAIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "verdict", "train.py")
sys.argv = [TRAIN] + sys.argv[2:]
runpy.run_path(TRAIN, run_name="__main__")
