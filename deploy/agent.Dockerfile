# syntax=docker/dockerfile:1
# The agent: a static Go binary (no cgo) on a distroless base, run as a non-root user that holds
# only CAP_NET_ADMIN and CAP_NET_RAW (file capabilities set at build time). Run it in the
# router's network namespace and grant those capabilities to the container:
#   docker build -f deploy/agent.Dockerfile --build-arg VERSION=1.2.0 -t edgewan/agent:1.2.0 .
#   docker run -d --name edgewan-agent --network host --cap-add NET_ADMIN --cap-add NET_RAW \
#     -v /etc/edgewan:/etc/edgewan:ro -v edgewan-agent:/var/lib/edgewan-agent edgewan/agent:1.2.0
# Do not add --security-opt no-new-privileges: it stops file capabilities from taking effect.
# On a router, the systemd unit (deploy/systemd/edgewan-agent.service) is the usual way.
ARG GO_VERSION=1.26

FROM golang:${GO_VERSION}-bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends libcap2-bin && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=unknown
ARG DATE=unknown
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X main.Version=${VERSION} -X main.Commit=${COMMIT} -X main.Date=${DATE} -X github.com/edgewan/edgewan/buildinfo.Commit=${COMMIT} -X github.com/edgewan/edgewan/buildinfo.Date=${DATE}" \
      -o /out/usr/local/bin/agent ./agent \
 && setcap cap_net_admin,cap_net_raw+ep /out/usr/local/bin/agent \
 && mkdir -p /out/var/lib/edgewan-agent

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/usr/local/bin/agent /usr/local/bin/agent
COPY --from=build --chown=65532:65532 /out/var/lib/edgewan-agent /var/lib/edgewan-agent
USER 65532:65532
EXPOSE 9101
ENTRYPOINT ["/usr/local/bin/agent"]
CMD ["run", "--config", "/etc/edgewan/agent.yaml", "--data-dir", "/var/lib/edgewan-agent", "--metrics-listen", "127.0.0.1:9101"]
