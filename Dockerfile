# workerless: dispatches SQS messages from prioritised queues to one AWS Lambda function.
# All configuration comes from WORKERLESS_* environment variables (and the AWS SDK's AWS_* ones); see docs/configuration.md.
#
#   docker build -t workerless .
#   docker run --rm -e WORKERLESS_FUNCTION=my-fn -e WORKERLESS_QUEUES=high,low -e AWS_REGION=eu-west-1 workerless
#
# Offline machines without a registry: docker/build-image.sh first builds a local NODE_IMAGE stand-in.
# The tag says what it is, the digest pins the build to one image of it (Node 24.21.0). To move on, replace the digest
# with the tag's current one (`docker buildx imagetools inspect node:24-bookworm-slim`, the index digest).
ARG NODE_IMAGE=node:24-bookworm-slim@sha256:d6aa754f16b3197301076f047b5def2f02ea1dbbc2ca920407d46d7ec7f87b20

# --- build: compile TypeScript with the devDependencies --------------------------------------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: no dependency needs an install script to compile (protobufjs's only prints a notice).
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build
# The version the image is labelled with must be the one `workerless --version` prints (package.json's): a release
# built from a tag that does not match package.json fails here rather than publish an image that lies about itself.
ARG VERSION=unknown
RUN node -e 'const v = require("./package.json").version, a = process.env.VERSION; \
  if (a !== "unknown" && a !== v) { console.error(`VERSION build argument "${a}" is not package.json version "${v}"`); process.exit(1); }'

# --- deps: production dependencies only --------------------------------------------------------------------
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# Then drop what Node never loads at run time: type declarations and TypeScript sources (Node does not strip
# types under node_modules), source maps and docs. Halves the layer (about 47 -> 19 MB when it was added; test/docker prints today's size, about 28 MB).
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 && find node_modules -type f \( -name '*.ts' -o -name '*.mts' -o -name '*.cts' -o -name '*.map' \
      -o -iname '*.md' -o -iname '*.markdown' \) -delete

# --- runtime -------------------------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS runtime
# tini as PID 1: forwards SIGTERM/SIGINT to node and reaps zombies, so `docker stop` starts a graceful drain.
# Then the package managers the base image ships go: the daemon never installs anything, and npm, npx, corepack and
# yarn are code (and advisories) nobody runs. Node itself is all the runtime needs.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends tini \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt /var/log/dpkg.log \
 && rm -rf /usr/local/lib/node_modules/npm /usr/local/lib/node_modules/corepack /opt/yarn-* \
      /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack /usr/local/bin/yarn /usr/local/bin/yarnpkg \
      /root/.npm /tmp/*

# OCI image labels (https://github.com/opencontainers/image-spec/blob/main/annotations.md). The release workflow
# (.github/workflows/release.yml) and docker/build-image.sh pass the build arguments: the version (package.json's,
# checked in the build stage), the commit, the commit's time (RFC 3339) and the repository.
ARG VERSION=unknown
ARG REVISION=unknown
ARG CREATED=unknown
ARG SOURCE=https://github.com/workerless/workerless
LABEL org.opencontainers.image.title="workerless" \
      org.opencontainers.image.description="Dispatch SQS messages from prioritised queues to one AWS Lambda function" \
      org.opencontainers.image.licenses="MIT" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.source="${SOURCE}"

ENV NODE_ENV=production
WORKDIR /app
# Owned by root and read-only for the `node` user the process runs as.
COPY package.json ./
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist/src ./dist/src
RUN ln -s /app/dist/src/main.js /usr/local/bin/workerless

# The optional HTTP server (/healthz, /readyz, /metrics, status page) starts only when WORKERLESS_HTTP_PORT is set;
# 8080 is the recommended port (the Helm chart and the ECS task definition under deploy/ use it). Inside a
# container it must listen on all interfaces, not the 127.0.0.1 default.
ENV WORKERLESS_HTTP_HOST=0.0.0.0
EXPOSE 8080
# Probes /healthz when the HTTP server is on; with WORKERLESS_HTTP_PORT unset it exits 0, so a container run
# without the server is never marked unhealthy. No curl in the image: a node one-liner with a 4 s fetch timeout.
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "const p=process.env.WORKERLESS_HTTP_PORT;if(!p)process.exit(0);fetch('http://127.0.0.1:'+p+'/healthz',{signal:AbortSignal.timeout(4000)}).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]

USER node
STOPSIGNAL SIGTERM
# --max-semi-space-size=8 --heap-growing-percent=10: the V8 flags of the workerless command's #! line (src/main.ts says why).
ENTRYPOINT ["/usr/bin/tini", "--", "node", "--max-semi-space-size=8", "--heap-growing-percent=10", "/app/dist/src/main.js"]
