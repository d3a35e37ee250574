#!/usr/bin/env bash
# SpinKube (README.md in this folder), in steps (all four by default):
#   build    the WASI 0.2 build (make variants): SpinKube's shim serves no
#            WASI 0.3.0 component (README.md in this folder)
#   push     pushes the app of $MANIFEST (default: spin.toml in this folder,
#            the WASI 0.2 build without SQLite) to $IMAGE, the spec.image of
#            spinapp.yaml; INSECURE_REGISTRY=1: over plain HTTP (Spin's
#            --insecure), for a registry on loopback. tests/faults/registry.py
#            runs this step against a registry of its own.
#   secrets  makes (or replaces) the Secret book-catalog from SPIN_VARIABLE_<NAME>
#            (../settings.sh) and book-catalog-ca, the database's CA under the
#            key the executor mounts, from $DB_CA_FILE or else CloudNativePG's
#            Secret books-db-ca in the namespace books; restarts running pods
#   apply    the executor first (the operator refuses an app without it), the
#            app, the NetworkPolicy and the Ingress; never secret.yaml
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

build() {
    make variants
}

push() {
    : "${IMAGE:?set IMAGE to the spec.image of deploy/spinkube/spinapp.yaml}"
    insecure=()
    if [ "${INSECURE_REGISTRY:-}" = 1 ]; then insecure=(--insecure); fi
    spin registry push -f "${MANIFEST:-deploy/spinkube/spin.toml}" "${insecure[@]}" "$IMAGE"
}

secret() {
    kubectl create secret generic "$@" --dry-run=client -o yaml | kubectl apply -f -
}

secrets() {
    . deploy/settings.sh postgres
    secret book-catalog "${variables[@]/#/--from-literal=}"
    ca="$(mktemp)"
    if [ -n "${DB_CA_FILE:-}" ]; then
        cat "$DB_CA_FILE" > "$ca"
    else
        kubectl get secret books-db-ca -n books -o jsonpath='{.data.ca\.crt}' | base64 -d > "$ca"
    fi
    secret book-catalog-ca --from-file=ca-certificates.crt="$ca"
    rm -f "$ca"
    # Variables are read when a pod starts.
    if kubectl get deployment book-catalog > /dev/null 2>&1; then
        kubectl rollout restart deployment book-catalog
    fi
}

apply() {
    for file in executor spinapp networkpolicy ingress; do
        kubectl apply -f "deploy/spinkube/$file.yaml"
    done
}

[ $# -gt 0 ] || set -- build push secrets apply
for step in "$@"; do
    case "$step" in
        build | push | secrets | apply) "$step" ;;
        *) echo "steps: build push secrets apply" >&2 && exit 2 ;;
    esac
done
