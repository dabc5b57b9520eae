#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The storage scenarios of tests/smoke/x86_64-store.sh on one core: the storage engine
# runs from core 0's loop within storage.pass_budget_us per pass, next to the broker, and
# the data plane's records reach it through the engine's local queue instead of the mesh.
# Usage: x86_64-store-1core.sh BUILD_DIR
X86_64_STORE_SMP=1 X86_64_STORE_TAG=x86_64-store-1core \
	exec "$(cd "$(dirname "$0")" && pwd)/x86_64-store.sh" "$@"
