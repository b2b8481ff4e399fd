#!/usr/bin/env bash
# hack/timed.sh STAGE CMD...: runs CMD and then prints how long the stage took, so that every
# `make` tier log carries its own stage times (the README's figures come from these lines).
stage=$1
shift
start=$(date +%s)
"$@"
rc=$?
echo "make: stage $stage took $(($(date +%s) - start))s (exit $rc)"
exit $rc
