# syntax=docker/dockerfile:1
# volume-medic: one image for the receiver, the cluster worker and the node agent (the chart's
# templates pick the command: deploy/charts/volume-medic/templates/*.yaml). The image runs the
# compiled JavaScript of `npm run build` (dist/): Node could run the TypeScript directly, but type
# stripping keeps ~28 MiB of compiler resident in every process, and the node agent runs on every
# node (bench/README.md, "Footprint").
#
# The released image is built without a container engine, reproducibly, by `npm run image`
# (scripts/image/build.ts; README "Building the image"), and tested by `npm run test:image`.
# This Dockerfile builds the same layout for those who have Docker; keep the two in step: Node
# from scripts/with-node's DEFAULT_NODE_VERSION, /app with dist/ and production dependencies, the
# host tools below, user 65532 by default, the receiver's command as CMD.
#   docker build --build-arg VOLUME_MEDIC_REVISION=$(git rev-parse HEAD) -t <registry>/volume-medic:<tag> .
# VOLUME_MEDIC_REVISION is the `commit` label of volume_medic_build_info ("unknown" without it).
# The chart names the image in one place: values.yaml, image.repository / image.tag / image.digest.

ARG NODE_IMAGE=node:24.22.3-bookworm-slim

# --- build: TypeScript -> dist/ (dist/src, dist/workers), the node agent's bundle ->
#     dist/node-agent/ (needs the dev dependencies: typescript, @types/node, rolldown) ----------
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY src ./src
COPY workers ./workers
COPY scripts/lib/bundle-node-agent.ts ./scripts/lib/
RUN npm run build

# --- dependencies: production node_modules only, built where compilers may be present --------
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# typescript comes along under --omit=dev as valibot's optional peer; nothing loads it at run time.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 && rm -rf node_modules/typescript node_modules/.bin/tsc node_modules/.bin/tsserver \
 && npm cache clean --force

# --- runtime ---------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS runtime
# The host tools the runbooks call (scripts/image/build.ts names them): multipath-tools
# (multipath, dmsetup, kpartx), sg3-utils, udev (udevadm), ceph-common (rbd, rados, ceph: the
# cluster worker locates RBD watchers); util-linux (losetup, blockdev, lsblk, nsenter) and mount
# are in the base image. The node agent runs host-side commands through `nsenter -t 1 -m -n` with
# the host's own tools; the image's serve the cluster worker, dry runs and debugging.
ARG EXTRA_PACKAGES="multipath-tools sg3-utils udev ceph-common"
RUN if [ -n "${EXTRA_PACKAGES}" ]; then \
      apt-get update \
      && apt-get install -y --no-install-recommends ${EXTRA_PACKAGES} \
      && rm -rf /var/lib/apt/lists/*; \
    fi \
 && groupadd -g 65532 nonroot \
 && useradd -u 65532 -g 65532 -M -d /nonexistent -s /usr/sbin/nologin -c volume-medic nonroot
ENV NODE_ENV=production
# The source revision this image was built from: volume_medic_build_info{commit} and the OCI label.
ARG VOLUME_MEDIC_REVISION=unknown
ENV VOLUME_MEDIC_REVISION=${VOLUME_MEDIC_REVISION}
ARG VOLUME_MEDIC_VERSION=0.1.0
LABEL org.opencontainers.image.revision=${VOLUME_MEDIC_REVISION} \
      org.opencontainers.image.version=${VOLUME_MEDIC_VERSION} \
      org.opencontainers.image.source=https://github.com/volume-medic/volume-medic \
      org.opencontainers.image.title=volume-medic
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY --from=build /app/dist ./dist
# The receiver and the cluster worker run as 65532 (nonroot); the chart runs the node agent as
# root (its securityContext: runAsUser 0).
USER 65532:65532
EXPOSE 8080
# The receiver by default, with the V8 heap flags of the chart's receiver.yaml (test/unit/repo/deploy/
# render.test.ts keeps the two equal; scripts/image/build.ts uses the same); the chart sets
# `command` for every process.
CMD ["node", "--max-old-space-size=384", "--max-semi-space-size=64", "dist/src/control/main.js"]
