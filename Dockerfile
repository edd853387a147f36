# The Alma host, built from this repository: `docker build -t alma .`, then
# `docker run -p 127.0.0.1:8787:8787 -v alma:/data alma` (SQLite in /data), or `compose.yaml`
# (the host on PostgreSQL). The production command is `node apps/server/dist/cli/process.js serve`:
# node as PID 1 takes SIGTERM itself and drains (ALMA_SHUTDOWN_GRACE_MS, 10 s by default).

FROM node:24-bookworm-slim AS build
WORKDIR /app
# better-sqlite3 downloads a prebuilt binary; these build it when none matches.
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
COPY . .
RUN npm ci --no-audit --no-fund && npm run build && npm prune --omit=dev --no-audit --no-fund

FROM node:24-bookworm-slim
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8787 ALMA_HOME=/data
WORKDIR /app
COPY --from=build /app/package.json /app/package-lock.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/packages ./packages
COPY --from=build /app/apps ./apps
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME /data
EXPOSE 8787
HEALTHCHECK --interval=10s --timeout=3s \
  CMD ["node", "-e", "fetch('http://127.0.0.1:8787/healthz').then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "apps/server/dist/cli/process.js", "serve"]
