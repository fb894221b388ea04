#!/usr/bin/env bash
# make ci: runs every check (a make target each) as a graph: a step starts
# once the steps it needs have passed, several at a time. On the project's
# 2 cores, one step after another left the CPU idle most of the time
# (the e2e suites and the envtest suites mostly wait on API servers) while
# the builds and linters waited their turn; side by side, the waiting steps
# run under the computing ones.
#
# Each step's whole output goes to bin/ci/<step>.log; this prints when each
# step starts and ends, and at the end (or at the first failure, once the
# steps already running have finished) each step's start and time, so that
# every CI log says where its minutes went (CONTRIBUTING.md quotes them).
# A failed step's last lines are printed again at the end, where a CI log's
# tail shows them.
#
# What makes running side by side safe:
#   - prep installs the Debian packages and downloads the modules once
#     (dpkg takes one lock), and tools-module and tools build every tool
#     into bin/ before a step that uses one starts;
#   - verify-generated, the only part of make verify that writes, runs
#     before any step that reads what it writes: it makes every generated
#     file again and fails on drift. The steps after it get REGENERATE=no,
#     so nothing rewrites a generated file while another step reads it
#     (make/development.mk), and the rest of verify runs beside them;
#   - make test's go vet is left to make lint, whose govet covers the same
#     packages and the e2e suites' too;
#   - the mutants (make test-mutations-rotation) start once make test
#     has passed: their tests, run there on the same tree without the
#     mutation, are the control runs the rotation leaves out; the quick
#     matrix on the oldest Kubernetes (make test-k8s-quick) too, so that
#     its suites and make test's do not starve each other's API servers;
#     the oldest Kubernetes' binaries build from the start, at niceness
#     10, in the cores the builds before the suites leave idle;
#   - build runs once; later steps get make -o build, and make dist builds
#     a release into bin/release/ (make/build.mk's BUILD_DIR): no step
#     replaces a binary another step is putting into an image. make
#     test-dist checks the release's multi-arch images as make test-image
#     would (hack/test-dist.sh), so make ci builds them once;
#   - make test-dist archives the kubectl plugin for the images' two
#     Linux platforms only: its four others (darwin, windows) cost 14.5
#     CPU minutes cold on a fresh machine, 7 minutes of make ci's 2
#     cores; make test-dist alone, and make dist (make release), build
#     all six (CONTRIBUTING.md, test layers);
#   - the envtest suites and the clusters after them run in a network
#     namespace of their own (CI_NETNS_B), this commit's mutants in
#     another (CI_NETNS_C), the quick matrix's suites on the oldest
#     Kubernetes in a third (CI_NETNS_D), the e2e suite in make's NETNS,
#     its release upgrades in a fourth (CI_NETNS_E), the install ways in
#     theirs (INSTALL_WAYS_NETNS): their API servers, pod IPs and loopback
#     ports never meet. The three e2e runs name their clusters, folders and
#     containers apart (E2E_NAME), and take a release's build in turn
#     (hack/previous-release.sh's lock);
#   - the release upgrades (area=upgrade: from the newest release and from
#     the oldest supported, each under load and back) are an e2e run of
#     their own, on a cluster of their own, beside the rest of the suite:
#     in one run they made it the longest step of make ci, the one that
#     set its total. The suite's steps each build only the releases their
#     features start from (E2E_PREBUILD).
#
# Usage: MAKE=make hack/ci.sh   (CI_JOBS: most steps at once, 6 by default)
set -uo pipefail
cd "$(dirname "$0")/.."
make=${MAKE:-make}
jobs=${CI_JOBS:-6}
netns_b=${CI_NETNS_B:-myoperator-ci-b}
netns_c=${CI_NETNS_C:-myoperator-ci-c}
netns_d=${CI_NETNS_D:-myoperator-ci-d}
netns_e=${CI_NETNS_E:-myoperator-ci-e}
logs=bin/ci
mkdir -p "$logs"

after="REGENERATE=no -o build"
# name | the steps it needs | niceness | make's arguments. The order is
# the order in which ready steps start: the longest chain first (the
# Kubernetes binaries, then the e2e suites and the install ways), the
# envtest suites next. On a fresh machine the builds before the suites
# take the cores for about half an hour: the Kubernetes binaries (with
# kwok, one go build) beside the tools' module (every tool the suites and
# make verify-generated use, one go build: make/tools.mk says why), then
# the operator's own packages (verify-generated's generators, build). At
# niceness 10 run the checks no suite waits for (lint, the rest of
# verify, kube-score) and the linters' builds, so that what the suites
# need gets the cores first. The release files (make test-dist, its
# images' checks included) run at 0: the install ways wait for them; at
# niceness 10, on a fresh machine, the images' arm64 build had not ended
# 30 minutes after it started, and at 0 that chain still ended the last
# fresh run (images 2,379 s, release files 68 s, install ways 462 s: at
# 3,964 s of 3,964), which is why the release files no longer wait for a
# second image build of their own; they come before those checks in this
# list, so that, with CI_JOBS steps at once, they start as soon as build
# has passed. The suites themselves run at 0: their API servers and
# managers must not starve.
steps=(
  "prep||0|ci-prep"
  "k8s-binaries||0|k8s-binaries"
  "k8s-binaries-oldest||10|k8s-binaries-oldest"
  "tools-module|prep|0|tools-module"
  "verify-generated|tools-module|0|verify-generated"
  "build|verify-generated|0|build REGENERATE=no"
  "tools|tools-module|10|tools -j2"
  "test-e2e-upgrade|build k8s-binaries|0|test-e2e $after E2E_NAME=e2e-upgrade NETNS=$netns_e E2E_ARGS=--labels=area=upgrade"
  "test-e2e|build k8s-binaries|0|test-e2e $after E2E_PREBUILD= E2E_ARGS=--skip-labels=area=upgrade"
  "test|k8s-binaries verify-generated|0|test $after -o vet NETNS=$netns_b"
  "test-dist|build|0|test-dist $after PLUGIN_PLATFORMS=\$(PLATFORMS)"
  "verify|tools verify-generated build|10|verify $after -o verify-generated"
  "lint|tools verify-generated|10|lint $after"
  "kube-score|tools verify-generated|10|kube-score $after"
  "test-mutations-rotation|test|0|test-mutations-rotation $after NETNS=$netns_c"
  "test-k8s-quick|test k8s-binaries-oldest|0|test-k8s-quick $after NETNS=$netns_d"
  "test-make-run|test|0|test-make-run $after NETNS=$netns_b"
  "test-dev-cluster|test-make-run|0|test-dev-cluster $after NETNS=$netns_b"
  "test-pod-security|test-dev-cluster|0|test-pod-security $after NETNS=$netns_b"
  "test-demo|test-pod-security|0|test-demo $after NETNS=$netns_b"
  "test-e2e-install-ways|test-dist k8s-binaries|0|test-e2e-install-ways $after"
)

declare -A need niceness args state started took pid_of
order=()
for s in "${steps[@]}"; do
  IFS='|' read -r name deps nice margs <<<"$s"
  order+=("$name")
  need[$name]=$deps
  niceness[$name]=$nice
  args[$name]=$margs
  state[$name]=waiting
done

start=$(date +%s)
now() { echo $(($(date +%s) - start)); }
# The machine's CPU time from /proc/stat: busy (user, nice, system, irq,
# softirq) and not (idle, iowait), for the busy share over the run.
cpu() { awk '/^cpu /{print $2+$3+$4+$7+$8, $5+$6}' /proc/stat; }
read -r busy0 idle0 < <(cpu)

ready() { # ready NAME: every step it needs has passed
  local d
  for d in ${need[$1]}; do [ "${state[$d]}" = passed ] || return 1; done
}
running=0
failed=
launch() {
  local name=$1
  state[$name]=running
  started[$name]=$(now)
  running=$((running + 1))
  echo "ci: [$(now) s] start $name (make ${args[$name]}; niceness ${niceness[$name]})"
  # shellcheck disable=SC2086 # args is a word list.
  # time writes the CPU seconds (user, system) of the step's processes
  # that make waited for: the compilers, linkers, go test and the test
  # binaries, not daemons a step leaves to others (API servers that
  # outlive their parent, podman's conmon). (times, in this background
  # subshell, said 0.)
  ( TIMEFORMAT='%U %S'
    { time nice -n "${niceness[$name]}" $make --no-print-directory ${args[$name]} >"$logs/$name.log" 2>&1; } 2>"$logs/$name.cpu" ) &
  pid_of[$!]=$name
}

# cpu_of NAME: the step's user and system CPU seconds, from bin/ci/NAME.cpu.
cpu_of() {
  awk '{ printf "%d", $1 + $2 }' "$logs/$1.cpu" 2>/dev/null || echo "?"
}

report() {
  local read_busy read_idle name
  read -r read_busy read_idle < <(cpu)
  echo "ci: time per step (total $(now) s; CPU busy $(( 100 * (read_busy - busy0) / (read_busy - busy0 + read_idle - idle0 + 1) )) % of the cores; logs in $logs/):"
  for name in "${order[@]}"; do
    case ${state[$name]} in
      passed) printf '  %-25s %5s s  (started at %s s; CPU %s s)\n' "$name:" "${took[$name]}" "${started[$name]}" "$(cpu_of "$name")" ;;
      failed) printf '  %-25s FAILED after %s s  (started at %s s; CPU %s s)\n' "$name:" "${took[$name]}" "${started[$name]}" "$(cpu_of "$name")" ;;
      *) printf '  %-25s not run\n' "$name:" ;;
    esac
  done
}

while :; do
  if [ -z "$failed" ]; then
    for name in "${order[@]}"; do
      [ "$running" -lt "$jobs" ] || break
      [ "${state[$name]}" = waiting ] && ready "$name" && launch "$name"
    done
  fi
  [ "$running" -gt 0 ] || break
  wait -n -p done_pid
  rc=$?
  name=${pid_of[$done_pid]}
  running=$((running - 1))
  took[$name]=$(( $(now) - started[$name] ))
  if [ "$rc" = 0 ]; then
    state[$name]=passed
    echo "ci: [$(now) s] passed $name in ${took[$name]} s"
  else
    state[$name]=failed
    failed="$failed $name"
    echo "ci: [$(now) s] FAILED $name after ${took[$name]} s (exit $rc); waiting for the steps still running, starting no other"
  fi
done

for name in $failed; do
  echo "ci: ===== the last 60 lines of $logs/$name.log"
  tail -n 60 "$logs/$name.log"
done
report
for name in "${order[@]}"; do
  [ "${state[$name]}" = passed ] || exit 1
done
