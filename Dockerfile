# syntax=docker/dockerfile:1
# volume-medic: one image for the receiver, the cluster worker and the node agent (the manifests
# pick the command). The image runs the compiled JavaScript of `npm run build` (dist/): Node could
# run the TypeScript directly, but type stripping keeps ~28 MiB of compiler resident in every
# process, and the node agent runs on every node (bench/README.md, "Footprint").
#   docker build --build-arg VOLUME_MEDIC_REVISION=$(git rev-parse HEAD) -t <registry>/volume-medic:<tag> .
# VOLUME_MEDIC_REVISION is the `commit` label of volume_medic_build_info ("unknown" without it).
# The manifests name the image in one place: deploy/base/kustomization.yaml (images:).

ARG NODE_IMAGE=node:24-bookworm-slim

# --- build: TypeScript -> dist/ (needs the dev dependencies: typescript, @types/node) ---------
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY src ./src
COPY workers ./workers
RUN npm run build

# --- dependencies: production node_modules only, built where compilers may be present --------
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 && npm cache clean --force

# --- runtime ---------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS runtime
# Tools the runbooks run inside the container. The node agent runs host-side commands through
# `nsenter -t 1 -m` (util-linux, in the base image) with the host's own multipath and rbd; the
# cluster worker needs the Ceph CLI (rbd, rados, ceph) to locate RBD watchers. Set
# EXTRA_PACKAGES="" for an image without Ceph tools.
ARG EXTRA_PACKAGES="ceph-common"
RUN if [ -n "${EXTRA_PACKAGES}" ]; then \
      apt-get update \
      && apt-get install -y --no-install-recommends ${EXTRA_PACKAGES} \
      && rm -rf /var/lib/apt/lists/*; \
    fi
ENV NODE_ENV=production
# The source revision this image was built from: volume_medic_build_info{commit} and the OCI label.
ARG VOLUME_MEDIC_REVISION=unknown
ENV VOLUME_MEDIC_REVISION=${VOLUME_MEDIC_REVISION}
LABEL org.opencontainers.image.revision=${VOLUME_MEDIC_REVISION}
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY --from=build /app/dist ./dist
# The base image's unprivileged user (uid 1000). The node agent's DaemonSet runs it as root.
USER node
EXPOSE 8080
# The receiver by default, with the V8 heap flags of deploy/base/receiver.yaml (the render test
# keeps the two equal); the manifests set `command` for every process.
CMD ["node", "--max-old-space-size=384", "--max-semi-space-size=64", "dist/src/main.js"]
