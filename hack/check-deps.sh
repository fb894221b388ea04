#!/usr/bin/env bash
# Keeps what ships apart from what tests and tools: the four shipped binaries
# (the manager from main.go, bootstrap from initcontainer/, the Guestbook's
# server from guestbookserver/, the kubectl plugin from kubectl-myoperator/) may link only the product's own packages, and
# no product package may import a test or tooling package (test/, e2e/,
# hack/) or test support (testing, net/http/httptest, envtest, fake clients),
# and the kubectl plugin links none of the manager's runtime. make verify
# runs it; CONTRIBUTING.md describes the layout.
set -euo pipefail
cd "$(dirname "$0")/.."

module=$(go list -m)
# The product's folders: what the binaries are built from.
product_re="^${module}(/(apis|internal|reconcile|bootstrap|initcontainer|guestbookserver|kubectl-myoperator)(/.*)?)?\$"

status=0
for bin in . ./initcontainer ./guestbookserver ./kubectl-myoperator; do
  bad=$(go list -deps "$bin" | grep "^${module}\(/\|\$\)" | grep -Ev "$product_re" || true)
  if [[ -n $bad ]]; then
    echo "check-deps: the binary built from $bin links packages outside the product's folders:"
    sed 's/^/  /' <<<"$bad"
    status=1
  fi
done

# The kubectl plugin reads the cluster and renders Drinks: it links none of
# the manager's runtime (wiring, webhooks, certificate rotation, migration,
# sharding, the reconcilers). Names come from internal/names, the rendering
# from internal/render.
plugin_forbidden_re="^(${module}/(internal/app|internal/webhook|internal/migrate|internal/shard|internal/certs|reconcile)(/.*)?|github.com/open-policy-agent/cert-controller/.*)\$"
bad=$(go list -deps ./kubectl-myoperator | grep -E "$plugin_forbidden_re" || true)
if [[ -n $bad ]]; then
  echo "check-deps: kubectl-myoperator links the manager's runtime (take names from internal/names, the rendering from internal/render):"
  sed 's/^/  /' <<<"$bad"
  status=1
fi

# Each name of the install (CRDs, namespace, Lease, Secret, Services, webhook
# configurations, the operator's labels and annotations) is written out once,
# in internal/names: another copy would drift from it. AppName alone is also
# the field owner and event recorder name, kept apart on purpose
# (reconcile/operator.go says why).
names_file=internal/names/names.go
shipped_files=$(go list -f '{{range .GoFiles}}{{$.Dir}}/{{.}}{{"\n"}}{{end}}' . ./apis/... ./internal/... ./reconcile/... ./bootstrap/... ./initcontainer/... ./guestbookserver/... ./kubectl-myoperator/... |
  sed "s|^$PWD/||" | grep -v "^${names_file%/*}/")
while read -r value; do
  hits=$(grep -nF "\"$value\"" $shipped_files | grep -Ev '^[^:]+:[0-9]+:[[:space:]]*//' || true)
  if [[ -n $hits ]]; then
    echo "check-deps: \"$value\" is declared in $names_file; use the constant there:"
    sed 's/^/  /' <<<"$hits"
    status=1
  fi
done < <(grep -oE '= "[^"]*(myoperator|example\.com|my\.domain)[^"]*"' "$names_file" | sed -E 's/^= "(.*)"$/\1/' | grep -vx myoperator)

# docs/DESIGN.md maps the shipped packages: each one is named there, as
# `path` in the package table or, for a main package, by a file of it.
while read -r pkg; do
  rel=${pkg#"$module"/}
  if ! grep -qE "\`${rel}(/[A-Za-z0-9_]+\.go)?\`" docs/DESIGN.md; then
    echo "check-deps: package $rel is not in docs/DESIGN.md's package table: add a row saying what it holds"
    status=1
  fi
done < <(go list ./apis/... ./internal/... ./reconcile/... ./bootstrap/... ./initcontainer/... ./guestbookserver/... ./kubectl-myoperator/...)

# The Drink's spoke versions are apis/drinks' own: other code adds them to a
# scheme and converts through the package apis/drinks, so that adding or
# retiring a version changes only apis/drinks. Tests are exempt: a test that
# writes a Drink in one version is about that version.
while read -r pkg imports; do
  [[ $pkg == "$module"/apis/drinks || $pkg == "$module"/apis/drinks/* ]] && continue
  for imp in $imports; do
    if [[ $imp == "$module"/apis/drinks/v1alpha1 || $imp == "$module"/apis/drinks/v1beta1 ]]; then
      echo "check-deps: $pkg imports $imp; use the package apis/drinks (AddToScheme, NewConverter, Default.New, Default.Convert)"
      status=1
    fi
  done
done < <(go list -f '{{.ImportPath}} {{join .Imports " "}}' ./...)

# Non-test imports of every product package (a test file may import test
# helpers; the package itself may not).
while read -r pkg imports; do
  for imp in $imports; do
    if [[ $imp == "$module"/* ]] && ! [[ $imp =~ $product_re ]]; then
      echo "check-deps: product package $pkg imports $imp (a test or tooling package)"
      status=1
    fi
    case $imp in
      testing | testing/* | net/http/httptest | */envtest | */envtest/* | */client/fake | */client/interceptor)
        echo "check-deps: product package $pkg imports $imp (test support)"
        status=1
        ;;
    esac
  done
done < <(go list -f '{{.ImportPath}} {{join .Imports " "}}' . ./apis/... ./internal/... ./reconcile/... ./bootstrap/... ./initcontainer/... ./guestbookserver/... ./kubectl-myoperator/...)

if [[ $status -ne 0 ]]; then
  echo "check-deps: failed; each line above names what to change"
fi
exit $status
