# Sourced by the reproduce/measure-* scripts that check a kernel change under compute-sanitizer.
#   sanitize OUTDIR TIMEOUT COMMAND...
# runs COMMAND under memcheck, then racecheck (each stopped after TIMEOUT seconds), logs to
# OUTDIR/memcheck.log and OUTDIR/racecheck.log, prints each tool's exit status and clean-summary
# count, and returns 1 if either failed or compute-sanitizer is missing (a check that did not run
# is not a pass).
sanitize() {
    local out=$1 limit=$2 san tool rc status=0
    shift 2
    san=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
    if [ -z "$san" ]; then
        echo "NOT RUN: compute-sanitizer not found"
        return 1
    fi
    for tool in memcheck racecheck; do
        timeout "$limit" "$san" --tool "$tool" --report-api-errors no --error-exitcode 99 \
            --target-processes all "$@" > "$out/$tool.log" 2>&1
        rc=$?
        echo "$tool: exit $rc ($(grep -c "ERROR SUMMARY: 0 errors\|RACECHECK SUMMARY: 0 hazards" "$out/$tool.log") clean summaries)"
        [ "$rc" -eq 0 ] || status=1
    done
    return $status
}
