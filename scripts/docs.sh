#!/usr/bin/env bash
# Builds the documentation (docs/, Sphinx with MyST Markdown and the Furo theme) into docs/_build/html, offline.
# Warnings fail the build (-W, all reported first with --keep-going), and so do broken references (-n) and broken
# links or anchors between the built pages (scripts/check_links.py).
#   bash scripts/docs.sh                 # into docs/_build/html; open docs/_build/html/index.html
#   bash scripts/docs.sh OUTPUT_DIR      # elsewhere (the tests build into a temporary directory)
# Needs the `docs` extra (scripts/setup.sh installs it): .venv/bin/python -m pip install -e ".[docs]".
set -euo pipefail
cd "$(dirname "$0")/.."
python="${PYTHON:-.venv/bin/python}"
out="${1:-docs/_build/html}"
"$python" -c "import sphinx, myst_parser, furo" 2>/dev/null || {
    echo "docs.sh: Sphinx, myst-parser or furo is missing from $python; install them: $python -m pip install -e '.[docs]'" >&2
    exit 1
}
LIGHTNING_HPU_BACKEND="${LIGHTNING_HPU_BACKEND:-cpu}" "$python" -m sphinx -W --keep-going -n -q -b html \
    -d "$out/.doctrees" docs "$out"
# Every link between the built pages, anchors and the source pages' "[docs]" back-links included, must resolve.
"$python" scripts/check_links.py "$out"
echo "docs.sh: built $out/index.html"
