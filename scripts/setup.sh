#!/usr/bin/env bash
# Installs what a fresh Debian machine lacks to run and test the service: Chromium,
# ffmpeg, Xvfb and xdotool from Debian's packages (as root), pnpm through corepack, and
# the project's packages. Safe to run again: it installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v chromium >/dev/null || need+=(chromium)
command -v ffmpeg >/dev/null || need+=(ffmpeg)
command -v Xvfb >/dev/null || need+=(xvfb)
command -v xdotool >/dev/null || need+=(xdotool)
command -v xclip >/dev/null || need+=(xclip)
# Client certificates: openssl reads and rewrites PKCS#12 uploads, certutil/pk12util fill a
# session's NSS database.
command -v openssl >/dev/null || need+=(openssl)
command -v pk12util >/dev/null || need+=(libnss3-tools)
# Tasks and execute-code: user code runs inside bubblewrap.
command -v bwrap >/dev/null || need+=(bubblewrap)
if [ "${#need[@]}" -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "setup: installing ${need[*]} from Debian's packages"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" fonts-liberation >/dev/null
  else
    echo "setup: missing ${need[*]}: install them as root (apt-get install ${need[*]})" >&2
    exit 1
  fi
fi

# pnpm, at the version package.json pins. The npm registry mirror this project is built
# against serves no corepack signing keys, so corepack's signature check is off for this
# one download; corepack caches pnpm afterwards.
export COREPACK_ENABLE_DOWNLOAD_PROMPT=0 COREPACK_INTEGRITY_KEYS=0
if ! pnpm --version >/dev/null 2>&1; then
  # corepack ships with Node; where it does not (or cannot write its shims), npm installs
  # the same pinned version.
  corepack enable 2>/dev/null && pnpm --version >/dev/null 2>&1 ||
    npm install -g "$(node -p 'require("./package.json").packageManager')"
fi
echo "setup: pnpm $(pnpm --version)"
pnpm install --frozen-lockfile
