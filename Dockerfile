# The Slipway control plane: `docker build -t slipway .`
#
# Runs as uid 65532 (non-root) and is made for a read-only root filesystem: it writes only to
# /data (server.dataDir: SQLite, sources; a volume or PVC) and /tmp (tsx's compile cache and temp
# files; an emptyDir). Code and dependencies are root-owned and not writable by the process.
# Kubernetes ignores HEALTHCHECK; its probes (the Helm chart) are HTTP GET on port 8080:
# liveness /healthz, readiness /readyz.
#
# test/k8s/images.sh builds the same image without Docker for the test cluster (Debian bookworm,
# this Node version, the same files, user, env and entry point); test/contract/dockerfiles.test.ts
# holds the two to the same Node version.

# Production dependencies only. better-sqlite3's native addon is built here: the full image has
# python3, make and g++ for when no prebuilt binary fits.
FROM node:26.12.1-bookworm AS deps
WORKDIR /opt/slipway
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

FROM node:26.12.1-bookworm-slim AS runtime
ENV NODE_ENV=production \
    HOME=/tmp \
    npm_config_cache=/tmp/.npm \
    SVC_LISTEN=0.0.0.0:8080 \
    SVC_DATA_DIR=/data
WORKDIR /opt/slipway
COPY --from=deps /opt/slipway/node_modules ./node_modules
COPY package.json tsconfig.json ./
COPY api ./api
COPY bin ./bin
COPY src ./src
COPY web ./web
RUN mkdir -p /data && chown 65532:65532 /data
USER 65532:65532
VOLUME ["/data", "/tmp"]
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s \
  CMD ["node", "-e", "fetch('http://127.0.0.1:8080/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# What `npm start` runs (tsx src/main.ts), in one process: SIGTERM reaches main.ts's drain.
ENTRYPOINT ["node", "--import", "tsx", "src/main.ts"]
