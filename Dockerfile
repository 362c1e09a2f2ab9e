# The service as a container image: `docker build -t cloud-browser .`, then
# `docker run -p 8080:8080 --security-opt seccomp=deploy/seccomp-chromium.json cloud-browser`
# (why the seccomp profile: docs/operations/container.md). Three stages: `build` turns the
# TypeScript into JavaScript, `deps` installs the production dependencies alone, and the
# final stage gets those two and Debian's Chromium, with no compiler, pnpm or its store.
#
# BASE: any Debian bookworm image with Node 20 at /usr/local/bin or /usr/bin
# (scripts/test-image.ts builds one with debootstrap where no registry can be reached).
ARG BASE=node:20-bookworm-slim

FROM ${BASE} AS toolchain
# A proxy's CA, when the build runs behind one (deploy/build-ca/README.md); an empty file else.
COPY deploy/build-ca/ /tmp/build-ca/
RUN touch /tmp/build-ca/extra.pem
ENV NODE_EXTRA_CA_CERTS=/tmp/build-ca/extra.pem \
    COREPACK_ENABLE_DOWNLOAD_PROMPT=0 \
    COREPACK_INTEGRITY_KEYS=0 \
    CI=true
WORKDIR /src
COPY package.json pnpm-lock.yaml .npmrc ./
# pnpm at the version package.json pins (corepack ships with Node 20).
RUN corepack enable && pnpm --version

FROM toolchain AS build
RUN pnpm install --frozen-lockfile
COPY openapi.yaml ./
COPY generated generated
COPY server server
# Each .ts becomes a .js beside it (no bundle: the server reads its own files relative to its
# modules); tsx, a development dependency, is not needed to run it. The type check is
# `pnpm typecheck`'s job, not the image's.
RUN find server generated -name '*.ts' ! -name '*.d.ts' > /tmp/sources && \
    node_modules/.bin/esbuild $(cat /tmp/sources) --outdir=. --outbase=. --format=esm \
      --platform=node --target=node20 --log-level=warning

FROM toolchain AS deps
# Production dependencies only; the store they were linked from stays in this stage.
RUN pnpm install --frozen-lockfile --prod

FROM ${BASE}
# What scripts/setup.sh installs on a host, plus tini (PID 1) and fonts for the world's pages.
RUN apt-get update && \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      chromium ffmpeg xvfb xdotool xclip openssl libnss3-tools bubblewrap tini ca-certificates \
      fonts-liberation fonts-noto-core fonts-noto-color-emoji fonts-noto-cjk && \
    rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb
# A fixed uid, so a volume's owner and a pod's runAsUser can name it.
RUN groupadd --gid 10001 cloudbrowser && \
    useradd --uid 10001 --gid 10001 --home-dir /home/cloudbrowser --create-home \
      --shell /usr/sbin/nologin cloudbrowser && \
    mkdir /data && chown 10001:10001 /data
WORKDIR /app
COPY --from=deps /src/node_modules node_modules
COPY --from=build /src/server server
COPY --from=build /src/generated generated
COPY package.json openapi.yaml ./
ENV NODE_ENV=production \
    PORT=8080 \
    DATA_DIR=/data \
    CHROMIUM_PATH=/usr/bin/chromium
VOLUME /data
EXPOSE 8080
USER 10001:10001
# A first start migrates the database: over 100 s at load average 50 on 2 cores.
HEALTHCHECK --interval=10s --timeout=5s --start-period=180s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# tini as PID 1: it reaps the zombies Chromium's helpers leave and hands SIGTERM to the
# server, which drains (sessions end server_shutdown) and exits 0.
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "server/main.js"]
# Last: a new version or source changes only this layer, never the packages above.
ARG VERSION=0.1.0
ARG SOURCE=https://example.invalid/cloud-browser
LABEL org.opencontainers.image.title="cloud-browser" \
      org.opencontainers.image.description="Self-hostable cloud browser service for AI agents and automation" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.licenses="NOASSERTION"
