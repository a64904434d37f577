#!/usr/bin/env bash
# Makes a job fail in one of three ways under hvdrun (np 3 or 2), then checks
# that every surviving rank dumped its flight record and that hvd_flight
# names the culprit from the dumps.
#
#   check_flight.sh stop  HVDRUN FAULT_TEST HVD_FLIGHT  rank 1 SIGSTOPs itself
#   check_flight.sh kill  HVDRUN FAULT_TEST HVD_FLIGHT  rank 1 SIGKILLs itself
#   check_flight.sh order HVDRUN FAULT_TEST HVD_FLIGHT  rank 1 submits another tensor first
set -u
mode=${1:?mode} hvdrun=${2:?hvdrun} prog=${3:?fault_test} flight=${4:?hvd_flight}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export HVD_FLIGHT_RECORDER_SIZE=1000 HVD_FLIGHT_RECORDER_DIR=$dir HVD_OP_TIMEOUT_SECONDS=3
fail=0
expect() {
  local what=$1
  shift
  if "$@"; then echo "ok: $what"; else echo "MISSING: $what"; fail=1; fi
}
case $mode in
  stop)
    survivors="0 2" culprit="rank 1" kind="never submitted"
    # mixed: rank 0 exits 1 after its error, rank 2 ignores the launcher's
    # SIGTERM that follows, so it meets its own error and dumps too (with
    # both exiting, the first exit's SIGTERM could end rank 2 before that).
    timeout -k 5 60 "$hvdrun" -np 3 "$prog" end 1 mixed >"$dir/out" 2>&1
    ;;
  kill)
    survivors="0" culprit="rank 1" kind="never submitted"
    HVD_GLOO_TIMEOUT_SECONDS=5 timeout -k 5 60 "$hvdrun" --grace-period 20 -np 2 "$prog" kill \
      >"$dir/out" 2>&1
    ;;
  order)
    survivors="0 1 2" culprit="rank 1" kind="a different order"
    timeout -k 5 60 "$hvdrun" -np 3 "$prog" order >"$dir/out" 2>&1
    ;;
  *)
    echo "unknown mode $mode"
    exit 2
    ;;
esac
for r in $survivors; do
  expect "rank $r dumped its flight record" test -s "$dir/hvd_flight.rank$r.json"
done
/usr/bin/python3 "$flight" "$dir" >"$dir/report" 2>&1
echo "== hvd_flight:"
cat "$dir/report"
expect "hvd_flight found the divergence ($kind)" grep -q "^first divergence: .*$kind\|^the records agree; " "$dir/report"
expect "hvd_flight names the culprit ($culprit)" grep -qx "culprit: $culprit" "$dir/report"
if [ "$mode" = order ]; then
  expect "it shows both orders" grep -q "ranks 0, 2 submitted 'ord.a'" "$dir/report"
  expect "and rank 1's" grep -q "rank 1 submitted 'ord.b'" "$dir/report"
fi
if [ "$fail" -ne 0 ]; then
  echo "---- job output"
  cat "$dir/out"
fi
exit $fail
