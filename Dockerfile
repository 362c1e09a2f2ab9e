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
# Production dependencies only; the store they were linked from stays in this stage. The API
# reference at /docs serves one file of Redoc, its standalone bundle: the 55 MB of React,
# core-js and the rest that Redoc depends on are for building with it, so they go.
RUN pnpm install --frozen-lockfile --prod && \
    mkdir -p /tmp/redoc/bundles && cp node_modules/redoc/package.json /tmp/redoc/ && \
    cp node_modules/redoc/bundles/redoc.standalone.js* /tmp/redoc/bundles/ && \
    rm /tmp/redoc/bundles/*.map && \
    npm pkg delete dependencies.redoc devDependencies && \
    rm -rf node_modules && pnpm install --prod --prefer-offline --no-frozen-lockfile && \
    mv /tmp/redoc node_modules/redoc

# ffmpeg for the recordings alone (JPEG frames through the concat demuxer into H.264 in MP4,
# server/recording/encode.ts): Debian's own source, built with nothing else. Debian's ffmpeg
# package brings 198 MB of codecs, filters and devices the service never uses.
FROM ${BASE} AS ffmpeg
RUN if [ -f /etc/apt/sources.list.d/debian.sources ]; then \
      sed -i 's/^Types: deb$/Types: deb deb-src/' /etc/apt/sources.list.d/debian.sources; fi; \
    if [ -f /etc/apt/sources.list ]; then \
      sed -n 's/^deb /deb-src /p' /etc/apt/sources.list > /etc/apt/sources.list.d/sources-src.list; fi; \
    apt-get update && \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential nasm pkg-config libx264-dev xz-utils ca-certificates
WORKDIR /build
RUN apt-get source ffmpeg && mv ffmpeg-*/ ffmpeg
WORKDIR /build/ffmpeg
RUN ./configure --disable-everything --disable-autodetect --disable-doc --disable-debug \
      --disable-ffplay --disable-ffprobe --disable-network --disable-avdevice --disable-postproc \
      --disable-swresample --enable-gpl --enable-libx264 --enable-protocol=file \
      --enable-demuxer=concat,image2,mjpeg,image_jpeg_pipe --enable-decoder=mjpeg \
      --enable-parser=mjpeg --enable-encoder=libx264,mpeg4 --enable-muxer=mp4 \
      --enable-filter=scale,pad,setsar,format && \
    make -j"$(nproc)" ffmpeg && strip ffmpeg

FROM ${BASE}
# Files dpkg leaves out of every package: documentation and translations (as Debian's slim
# images do), and what Chromium never loads: Mesa's drivers and the LLVM and Z3 they link
# (162 MB; Xvfb's GLX goes without them, and Chromium draws with its own SwiftShader),
# Vulkan's validation layer (23 MB, a debugging aid) and the serif CJK faces (45 MB; pages
# asking for serif CJK get the sans).
COPY deploy/dpkg-excludes /etc/dpkg/dpkg.cfg.d/cloud-browser
# What scripts/setup.sh installs on a host (ffmpeg built above), plus tini (PID 1) and fonts
# for the world's pages.
RUN apt-get update && \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      chromium libx264-164 xvfb xdotool xclip openssl libnss3-tools bubblewrap tini ca-certificates \
      fonts-liberation fonts-noto-core fonts-noto-color-emoji fonts-noto-cjk && \
    rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb /var/cache/apt/*.bin
COPY --from=ffmpeg /build/ffmpeg/ffmpeg /usr/local/bin/ffmpeg
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
