#!/bin/sh
# What a pi-host host needs from the system, installed the same way everywhere: the packages of
# infra/system-packages.txt that are missing (plus any `package` or `package:command` given as
# arguments: .ci/run's test-only ones), then the sandbox user. Run as root by .ci/run and by the
# Dockerfile, so the two cannot drift. PI_SANDBOX_USER names the user (default pihost-sandbox),
# PI_SANDBOX_UID pins its uid and gid (the image does: files in a shared workspace volume keep one
# owner across hosts and image rebuilds); PI_APT_CLEAN=1 removes apt's lists afterwards (images).
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
list="$here/system-packages.txt"

present() {
  case "$1" in
    /*) [ -e "$1" ] ;;
    *) command -v "$1" >/dev/null 2>&1 ;;
  esac
}

missing=""
while read -r package check _; do
  case "$package" in '' | '#'*) continue ;; esac
  present "$check" || missing="$missing $package"
done <"$list"
for extra in "$@"; do
  package="${extra%%:*}"
  check="${extra#*:}"
  if [ "$check" = "$extra" ] || ! present "$check"; then missing="$missing $package"; fi
done

if [ -n "$missing" ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "installing$missing needs root; install them or run as root" >&2
    exit 1
  fi
  echo "==> installing$missing"
  apt-get update
  # shellcheck disable=SC2086 # one word per package
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing
else
  echo "==> system packages already installed ($(grep -cv '^\s*\(#\|$\)' "$list") from infra/system-packages.txt)"
fi
if [ "${PI_APT_CLEAN:-0}" = 1 ]; then
  apt-get clean
  rm -rf /var/lib/apt/lists/*
fi

# The file helper runs /usr/bin/node inside the sandbox, which binds /usr only (tools/file-helper):
# a node installed elsewhere under /usr (the official images' /usr/local/bin/node) is linked there.
if [ ! -e /usr/bin/node ]; then
  node="$(command -v node || true)"
  case "$node" in
    /usr/*)
      echo "==> linking /usr/bin/node to $node"
      ln -s "$node" /usr/bin/node
      ;;
    *) echo "warning: /usr/bin/node is missing and node ($node) is not under /usr: the file tools cannot start" >&2 ;;
  esac
fi

# The unprivileged user every sandboxed program runs as (docs/operations.md).
user="${PI_SANDBOX_USER:-pihost-sandbox}"
if getent passwd "$user" >/dev/null; then
  echo "==> sandbox user $user exists"
elif [ "$(id -u)" -ne 0 ]; then
  echo "the sandbox user $user is missing; creating it needs root" >&2
  exit 1
else
  echo "==> creating the sandbox user $user"
  if [ -n "${PI_SANDBOX_UID:-}" ]; then
    groupadd --system --gid "$PI_SANDBOX_UID" "$user"
    useradd --system --uid "$PI_SANDBOX_UID" --gid "$PI_SANDBOX_UID" --no-create-home --shell /usr/sbin/nologin "$user"
  else
    useradd --system --no-create-home --shell /usr/sbin/nologin "$user"
  fi
fi
