#!/usr/bin/env bash
# Deploys the Book Catalog (spin.toml, the default build) to Fermyon Cloud
# with the cloud plugin's `spin cloud deploy` (Spin 4 has no default deploy
# plugin), every setting from SPIN_VARIABLE_<NAME> (../settings.sh). The
# label "default" is linked to the cloud SQLite database
# $BOOK_CATALOG_SQLITE_DB (default book-catalog; created if missing).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
. deploy/settings.sh
spin build
spin cloud deploy --link "sqlite:default=${BOOK_CATALOG_SQLITE_DB:-book-catalog}" "${variable_flags[@]}"
