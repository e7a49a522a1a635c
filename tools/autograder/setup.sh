#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image: the pinned
# packages the tests need (the versions CI ran with, per Python; Python 3.10 or newer, as
# on Gradescope's Ubuntu 22.04 image), and the unprivileged user that student code runs as.
set -euo pipefail
cd "$(dirname "$0")"
python3 -m pip install -r requirements.txt \
  || python3 -m pip install --break-system-packages -r requirements.txt  # PEP 668 images
id lab-student >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin lab-student
