#!/usr/bin/env bash
# Deploys the PostgreSQL-only build to Akamai Functions with `spin aka deploy`
# (README.md in this folder), every setting from SPIN_VARIABLE_<NAME>
# (../settings.sh). Run it again, with every setting, to change one. The
# client of a login is who Akamai's edge names in true-client-ip, unless
# SPIN_VARIABLE_CLIENT_IP_HEADER says otherwise.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export SPIN_VARIABLE_CLIENT_IP_HEADER="${SPIN_VARIABLE_CLIENT_IP_HEADER:-true-client-ip}"
. deploy/settings.sh postgres
make variants
spin aka deploy -f deploy/postgres-only/spin.toml "${variable_flags[@]}"
