# Engine image for docker-compose.yml. The console is built with Node, the
# Engine with Go, and the result runs on Debian (PostgreSQL and Temporal are
# separate services there: DATABASE_URL and TEMPORAL_ADDRESS are set).
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

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates && rm -rf /var/lib/apt/lists/* \
    && useradd --system --home /var/lib/cairn cairn \
    && mkdir -p /var/lib/cairn/data && chown -R cairn:cairn /var/lib/cairn
COPY --from=engine /out/cairn /usr/local/bin/cairn
USER cairn
WORKDIR /var/lib/cairn
# HTTPS (the local CA under CAIRN_DATA_DIR, or a provided certificate);
# plain HTTP stays on loopback unless CAIRN_ALLOW_PLAIN_HTTP=1.
EXPOSE 8443
ENTRYPOINT ["cairn"]
CMD ["serve"]
