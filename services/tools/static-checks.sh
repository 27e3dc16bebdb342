#!/usr/bin/env bash
# `npm test`'s checks before vitest: the typecheck (three TypeScript programs: the Node code and tests,
# the console's browser code, the console's unit tests), biome and the layering rules. Each is one
# single-threaded process but biome, so they run side by side on the machine's cores instead of one
# after the other (about 100 CPU-seconds in all on the 2-core CI machine, docs/performance.md "The
# test suite"). Each one's output is printed whole when it ends, with its time; the exit status is
# non-zero if any failed.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

names=(typecheck typecheck:web typecheck:web-tests lint lint:deps)
cmds=(
  "npx tsc --noEmit -p tsconfig.json"
  "npx tsc --noEmit -p services/web/tsconfig.json"
  "npx tsc --noEmit -p services/web/tsconfig.test.json"
  "npx biome check ."
  "node .dependency-cruiser.cjs"
)
start="$(date +%s)"
pids=()
for i in "${!names[@]}"; do
  (
    t0="$(date +%s)"
    bash -c "${cmds[i]}" >"$out/$i.log" 2>&1
    rc=$?
    echo "$rc $(($(date +%s) - t0))" >"$out/$i.status"
    exit "$rc"
  ) &
  pids+=("$!")
done

failed=0
for i in "${!names[@]}"; do
  wait "${pids[i]}" || failed=1
  read -r rc secs <"$out/$i.status"
  [ "$rc" -eq 0 ] && verdict=ok || verdict="FAILED (exit $rc)"
  printf '\n==> %s: %s in %ss (%s)\n' "${names[i]}" "$verdict" "$secs" "${cmds[i]}"
  cat "$out/$i.log"
done
printf '\n==> static checks: %s in %ss\n' "$([ "$failed" -eq 0 ] && echo ok || echo FAILED)" "$(($(date +%s) - start))"
exit "$failed"
