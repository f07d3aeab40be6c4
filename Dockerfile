# The service as a container: three stages, so the image holds production dependencies and the built output
# only, never TypeScript or any dev tool. scripts/production-install-check.sh runs these very RUN commands on
# a plain machine (CI), since images cannot be built everywhere.

# Build: every dependency (TypeScript included) compiles src/ and the client into dist/.
FROM node:24-bookworm AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/client/package.json packages/client/
COPY scripts/ scripts/
RUN npm ci
COPY . .
RUN npm run build

# Production dependencies only; the full image has the compilers a native module may need if no prebuilt
# binary fits. `prepare` finds no sources here and builds nothing.
FROM node:24-bookworm AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY scripts/build-if-stale.mjs scripts/
RUN npm ci --omit=dev

# Runtime: slim base, root-owned files, an unprivileged user.
FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    DATABASE_URL=sqlite:/app/data/pet-adoption.db \
    DRAIN_SECONDS=5
WORKDIR /app
COPY --from=deps /app/node_modules node_modules
COPY --from=build /app/dist dist
COPY package.json ./
COPY scripts/build-if-stale.mjs scripts/
RUN mkdir -p /app/data && chown node:node /app/data
USER node
EXPOSE 3000
# SIGTERM starts the drain: /readyz answers 503 for DRAIN_SECONDS (5 s) while everything else is served,
# then connections get 3 s to finish and requests in flight at most 10 s more: at most 18 s, inside
# Kubernetes' default 30 s grace period. Docker's own default is 10 s: stop with `-t 30` (compose.yaml sets
# stop_grace_period).
STOPSIGNAL SIGTERM
# Liveness with what the image has: node itself (no curl or wget in the slim base).
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# node directly, not npm, so the signal reaches the service; the Node options are npm start's.
CMD ["node", "--max-old-space-size=1024", "--max-semi-space-size=16", "--no-allocation-site-pretenuring", "dist/cli.js", "serve"]
