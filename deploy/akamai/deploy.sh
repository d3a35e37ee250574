#!/usr/bin/env bash
# Deploys the PostgreSQL-only build to Akamai Functions with `spin aka deploy`
# (README.md in this folder), every setting from SPIN_VARIABLE_<NAME>
# (../settings.sh). Run it again, with every setting, to change one.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
. deploy/settings.sh postgres
make variants
spin aka deploy -f deploy/akamai/spin.toml "${variable_flags[@]}"
