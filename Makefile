# Convenience targets; the README's two commands are scripts/demo.sh and scripts/test.sh.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X github.com/edgewan/edgewan/controller/server.Version=$(VERSION) -X main.Version=$(VERSION)

.PHONY: build test demo bench clean
build:
	CGO_ENABLED=0 go build -trimpath -ldflags '$(LDFLAGS)' -o bin/controller ./controller
	CGO_ENABLED=0 go build -trimpath -ldflags '$(LDFLAGS)' -o bin/agent ./agent

test:
	bash scripts/test.sh

demo:
	bash scripts/demo.sh

clean:
	rm -rf bin
