# Sourced by setup.sh, demo.sh and test.sh: one line per stage of long work,
# and builds condensed to their percentage, so that a first run on a fresh
# machine is not minutes of silence and CI logs stay short. Full output goes
# to a log file that is printed (its end) when the step fails.

# "[hvd  12s] message": the seconds since the first script of this run started
# (exported, so that setup.sh run by demo.sh counts from the same start).
export HVD_PROGRESS_START=${HVD_PROGRESS_START:-$(date +%s)}
stage() {
  printf '[hvd %4ds] %s\n' "$(($(date +%s) - HVD_PROGRESS_START))" "$*"
}

# Runs "$@" with its output in LOG; on failure prints LOG's last lines.
run_logged() { # LOG command...
  local log=$1
  shift
  "$@" >"$log" 2>&1 && return 0
  local code=$?
  echo "failed (exit $code): $*; last lines of $log:"
  tail -n 60 "$log"
  return "$code"
}

# Runs a build ("cmake --build ...") with its output in LOG, printing its
# percentage: an updating line on a terminal, one line per 10% otherwise.
run_build() { # LABEL LOG command...
  local label=$1 log=$2 tty=0 start=$SECONDS code
  shift 2
  [ -t 1 ] && tty=1
  # The command's status travels through a file: the pipeline's is awk's.
  { "$@" && echo 0 >"$log.rc" || echo $? >"$log.rc"; } 2>&1 | tee "$log" | awk -v label="$label" -v tty="$tty" '
      /^\[ *[0-9]+%\]/ {
        match($0, /[0-9]+%/); p = substr($0, RSTART, RLENGTH - 1) + 0
        if (tty && p != shown) { printf "\r           %s: %3d%%", label, p; shown = p; fflush() }
        if (!tty && int(p / 10) * 10 > last) {
          last = int(p / 10) * 10; printf "           %s: %d%%\n", label, last; fflush()
        }
      }
      BEGIN { last = -1; shown = -1 }
      END { if (tty && shown >= 0) printf "\n" }'
  code=$(cat "$log.rc")
  rm -f "$log.rc"
  if [ "$code" = 0 ]; then
    stage "$label: done in $((SECONDS - start)) s (log: $log)"
    return 0
  fi
  echo "$label failed (exit $code); last lines of $log:"
  grep -E -m 20 'error|Error|ERROR' "$log" || true
  echo "----"
  tail -n 40 "$log"
  return 1
}
