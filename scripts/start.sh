#!/bin/sh
# How iii starts ide from a checkout: `scripts.start` in iii.worker.yaml
# (what `iii trigger compose::add worker=<this checkout>` and a compose
# `path://` container run, in this directory, with the environment compose
# builds: III_URL, III_NAMESPACE, III_WORKER_NAME, III_CONFIG,
# III_CONFIG_NAME).
#
# It starts the release binary and nothing else: compose gives a container
# 60 s to register, and building ide takes minutes, so a missing binary
# fails at once, saying how to build it. IDE_BIN names another binary.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${IDE_BIN:-"$here/target/release/ide"}
if [ ! -x "$bin" ]; then
  echo "ide: $bin does not exist or is not executable, so ide cannot start." >&2
  echo "ide: build it once (a few minutes), then start the container again:" >&2
  echo "ide:   cd $here && sh scripts/install.sh   (cargo build --release --locked, then the debug information split off)" >&2
  exit 127
fi
exec "$bin" "$@"
