#!/usr/bin/env bash
# The rdma transport over real libibverbs, on Soft-RoCE inside a qemu VM, side by side with
# perftest's ib_write_lat (tests/rdma-vm/run.sh). Fails if the rdma rounds, the bad-input
# cases or the rdma tests fail; never on a timing; skips visibly where qemu cannot run.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec bash tests/rdma-vm/run.sh
