#!/bin/sh
# The worker's install step (`scripts.install` in iii.worker.yaml): build the
# release binary, then split its debug information (line tables, kept for
# profiles and backtraces) off into target/release/ide.debug. The binary
# keeps its symbol table (function names in backtraces and `perf`) and a
# .gnu_debuglink naming ide.debug, where gdb and perf find the line tables.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
cargo build --release --locked
bin=target/release/ide
if ! command -v objcopy >/dev/null 2>&1; then
  echo "ide: objcopy (binutils) not found: $bin keeps its debug information" >&2
  exit 0
fi
# Already split (cargo found nothing to rebuild): keep the debug file as it is.
if objdump -h "$bin" | grep -q '\.gnu_debuglink'; then
  exit 0
fi
objcopy --only-keep-debug "$bin" "$bin.debug.tmp"
mv "$bin.debug.tmp" "$bin.debug"
# a copy, stripped and linked to the debug file, then put in place: cargo's
# own artifact (a hard link of this file) is never rewritten under it
objcopy --strip-debug --add-gnu-debuglink="$bin.debug" "$bin" "$bin.stripped"
mv "$bin.stripped" "$bin"
echo "ide: $bin $(wc -c < "$bin") bytes; debug information in $bin.debug"
