# Engine image for docker-compose.yml. The console is built with Node, the
# Engine with Go, and the result runs on Debian (PostgreSQL and Temporal are
# separate services there: DATABASE_URL and TEMPORAL_ADDRESS are set; a
# Temporal frontend that requires mTLS takes TEMPORAL_TLS_CERT, _KEY and _CA,
# mounted files the cairn user can read).
FROM node:20-bookworm AS web
WORKDIR /src/web
COPY web/package.json web/package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY web/ ./
RUN npm run build

FROM golang:1.26-bookworm AS engine
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
COPY --from=web /src/web/dist ./web/dist
RUN CGO_ENABLED=0 go build -o /out/cairn ./cmd/cairn
# The agent builds the Engine serves (agents/ next to cairn). The image has
# no .git: pass --build-arg AGENT_BUILD_ID=..., or each build reports
# dev-<sha256 prefix>, which the Engine derives the same way.
ARG AGENT_BUILD_ID=
RUN for p in linux-amd64 windows-amd64; do \
      os=${p%-*}; arch=${p#*-}; ext=; if [ "$os" = windows ]; then ext=.exe; fi; \
      out=/out/agents/$p/cairn-agent$ext; \
      CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath \
        -ldflags "${AGENT_BUILD_ID:+-X github.com/cairn-rmm/cairn/agent/version.BuildID=$AGENT_BUILD_ID}" -o $out ./cmd/cairn-agent; \
      if [ -n "$AGENT_BUILD_ID" ]; then echo "$AGENT_BUILD_ID" > $out.build-id; fi; \
    done

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates && rm -rf /var/lib/apt/lists/* \
    && useradd --system --home /var/lib/cairn cairn \
    && mkdir -p /var/lib/cairn/data && chown -R cairn:cairn /var/lib/cairn
COPY --from=engine /out/cairn /usr/local/bin/cairn
COPY --from=engine /out/agents /usr/local/bin/agents
USER cairn
WORKDIR /var/lib/cairn
# HTTPS (the local CA under CAIRN_DATA_DIR, or a provided certificate);
# plain HTTP stays on loopback unless CAIRN_ALLOW_PLAIN_HTTP=1.
EXPOSE 8443
ENTRYPOINT ["cairn"]
CMD ["serve"]
