# syntax=docker/dockerfile:1
# The controller: a static Go binary (no cgo) on a distroless base, run as a non-root user.
#   docker build -f deploy/controller.Dockerfile --build-arg VERSION=1.2.0 -t edgewan/controller:1.2.0 .
# (the build context is the repository's root). deploy/compose.yaml builds it too.
ARG GO_VERSION=1.26

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=unknown
ARG DATE=unknown
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X github.com/edgewan/edgewan/controller/server.Version=${VERSION} -X github.com/edgewan/edgewan/buildinfo.Commit=${COMMIT} -X github.com/edgewan/edgewan/buildinfo.Date=${DATE}" \
      -o /out/usr/local/bin/controller ./controller \
 && /out/usr/local/bin/controller version \
 && mkdir -p /out/var/lib/edgewan/tls /out/var/lib/edgewan-mosquitto /out/var/lib/edgewan-mosquitto-data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/usr/local/bin/controller /usr/local/bin/controller
# The data, TLS and Mosquitto-file directories, owned by the runtime user, so that fresh
# volumes mounted there take that owner.
COPY --from=build --chown=65532:65532 /out/var/lib/ /var/lib/
USER 65532:65532
WORKDIR /var/lib/edgewan
ENV EDGEWAN_DATA_DIR=/var/lib/edgewan
# API and NOC page (HTTPS), embedded MQTT broker (unused with an external one), metrics.
EXPOSE 8443 8883 9108
ENTRYPOINT ["/usr/local/bin/controller"]
CMD ["serve", "--listen", "0.0.0.0:8443", "--metrics-listen", "0.0.0.0:9108"]
