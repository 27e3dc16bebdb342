# One image for the pi-host host and agent worker (docker-compose.yml picks the entry point).
FROM node:20-bookworm-slim

WORKDIR /app
ENV npm_config_update_notifier=false \
    npm_config_fund=false

# Dependencies first, so a source change does not reinstall them. tsx runs the TypeScript sources.
COPY package.json package-lock.json ./
RUN npm ci && npm cache clean --force

COPY . .

# The host stays root: it will launch tool sandboxes as an unprivileged user (DESIGN section 7).
# The agent service runs as `node` (see docker-compose.yml).
CMD ["npx", "tsx", "services/host/main.ts"]
