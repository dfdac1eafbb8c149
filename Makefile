# Convenience targets; the README's two commands are scripts/demo.sh and scripts/test.sh.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
DATE    ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS := -s -w \
	-X github.com/edgewan/edgewan/controller/server.Version=$(VERSION) \
	-X github.com/edgewan/edgewan/buildinfo.Commit=$(COMMIT) -X github.com/edgewan/edgewan/buildinfo.Date=$(DATE) \
	-X main.Version=$(VERSION) -X main.Commit=$(COMMIT) -X main.Date=$(DATE)
# Release builds: static (no cgo), reproducible paths, for these platforms.
PLATFORMS ?= linux/amd64 linux/arm64

.PHONY: build release ldflags test demo bench clean
build:
	CGO_ENABLED=0 go build -trimpath -ldflags '$(LDFLAGS)' -o bin/controller ./controller
	CGO_ENABLED=0 go build -trimpath -ldflags '$(LDFLAGS)' -o bin/agent ./agent

# dist/edgewan-VERSION-OS-ARCH/{controller,agent} plus a SHA256SUMS file, e.g.
#   make release VERSION=1.2.0
release:
	rm -rf dist && mkdir -p dist
	set -e; for p in $(PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; d=dist/edgewan-$(VERSION)-$$os-$$arch; \
		for b in controller agent; do \
			CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch go build -trimpath -ldflags '$(LDFLAGS)' -o $$d/$$b ./$$b; \
		done; \
		cp deploy/systemd/*.service $$d/; \
	done
	cd dist && sha256sum edgewan-*/* > SHA256SUMS
	./dist/edgewan-$(VERSION)-$$(go env GOOS)-$$(go env GOARCH)/controller version 2>/dev/null || true

# The linker flags of build and release (deploy's TestReleaseBuild builds with them).
ldflags:
	@echo '$(LDFLAGS)'

test:
	bash scripts/test.sh

demo:
	bash scripts/demo.sh

clean:
	rm -rf bin dist
