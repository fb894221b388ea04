#!/usr/bin/env bash
# Keeps what ships apart from what tests and tools: the four shipped binaries
# (the manager from main.go, bootstrap from initcontainer/, the Guestbook's
# server from guestbookserver/, the kubectl plugin from kubectl-myoperator/) may link only the product's own packages, and
# no product package may import a test or tooling package (test/, e2e/,
# hack/) or test support (testing, net/http/httptest, envtest, fake clients). make verify runs it; CONTRIBUTING.md describes the layout.
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
  echo "check-deps: move the code the product needs into the product's folders, or keep test code in test/"
fi
exit $status
