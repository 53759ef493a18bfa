# Switchyard node image: HTTP API + cluster runner. One image for every node.
# The app runs its TypeScript sources through tsx at run time (bin/switchyard.js registers it); only the
# web console is built, in a stage of its own (Vite is a dev dependency), and copied in.
FROM node:20-bookworm-slim AS console
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm install --no-audit --no-fund --ignore-scripts
COPY tsconfig.json ./
COPY console ./console
COPY src/client ./src/client
RUN npm run build:console

FROM node:20-bookworm-slim

ENV NODE_ENV=production \
    SWITCHYARD_HOST=0.0.0.0 \
    SWITCHYARD_DATA_DIR=/var/lib/switchyard

WORKDIR /app

# Dependencies first, so editing sources does not reinstall them.
# `npm install`, not `npm ci`: it follows the committed lockfile, while `npm ci` rejects a lockfile
# made where some other-platform optional packages were unavailable (DESIGN.md §3).
COPY package.json package-lock.json ./
# `prepare` runs on install: without dev dependencies it skips the console (built in the stage above)
COPY scripts/prepare.mjs ./scripts/
RUN npm install --no-audit --no-fund --omit=dev \
 && npm cache clean --force

COPY tsconfig.json ./
COPY bin ./bin
COPY schema ./schema
COPY cluster ./cluster
COPY src ./src
COPY --from=console /app/console/dist ./console/dist

# Sources stay root-owned (read-only to the app). The data dir is only used without DATABASE_URL
# (embedded PostgreSQL, which refuses to run as root anyway).
RUN mkdir -p /var/lib/switchyard && chown node:node /var/lib/switchyard
USER node

# 8080: HTTP (REST, MCP, OAuth). 34431: cluster runner, for the other nodes only; never publish it.
EXPOSE 8080 34431

# On SIGTERM (forwarded by the init that compose's `init: true` runs as PID 1) the node turns
# unready, drains HTTP for up to SWITCHYARD_SHUTDOWN_GRACE, hands its shards back and exits.
CMD ["node", "bin/switchyard.js", "serve"]
