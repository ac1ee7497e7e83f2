# art — agent runtime tools. `make demo` shows the tools at work; `make test`
# is what CI runs.
include .ci/tools.pin

GO          ?= go
BIN         ?= bin
PREFIX      ?= /usr/local
BINDIR      ?= $(PREFIX)/bin
TOOLS       := $(notdir $(wildcard cmd/art*))
STATICCHECK := $(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
FUZZTIME    ?= 60s

export GOTOOLCHAIN ?= local

.PHONY: all build install test vet lint unit mcp-clients demo fuzz bench crash mutants release clean

all: build

# -trimpath: the binaries carry module paths, not the builder's directories.
# CGO_ENABLED=0: static binaries start faster (kong's os/user import would
# otherwise link libc dynamically: artexec measured 2.6x vs 2.0x GNU timeout).
# LDFLAGS=-s -w leaves out the symbol table and DWARF (about 30% of each
# binary); panics still print symbolised stacks and `go version -m` still
# reads the module list. `make build LDFLAGS=` keeps them for a debugger.
LDFLAGS     ?= -s -w
build:
	@mkdir -p $(BIN)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags='$(LDFLAGS)' -o $(BIN)/ ./cmd/...

# make install [PREFIX=/usr/local] [DESTDIR=staging]: the six tools (with
# artexec-shim, artexec-cli, artobs-web and artobs-otlp, which they run
# from their own directory) in
# $(DESTDIR)$(BINDIR), where the cron examples expect them.
install: build
	install -d $(DESTDIR)$(BINDIR)
	install -m 0755 $(addprefix $(BIN)/,$(TOOLS)) $(DESTDIR)$(BINDIR)/

test: vet lint unit

# vet also builds one fuzz target that links the task's child code: go test
# -fuzz instruments every package, and that nosplit code must stay within
# the linker's stack limit under the instrumentation too
# (lib/execx/stage/mount_linux.go, setup).
vet:
	@test -z "$$(gofmt -l .)" || { echo "gofmt needed on:"; gofmt -l .; exit 1; }
	$(GO) vet ./...
	GOOS=darwin $(GO) vet ./...
	GOARCH=arm64 $(GO) vet ./...
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeSpec$$' -fuzztime 1x ./lib/execx/shim >/dev/null

# checkpin refuses a drifted pin and a Go toolchain the pinned staticcheck
# cannot read, and prints both versions.
lint:
	$(GO) run ./internal/tools/checkpin
	$(STATICCHECK) ./...

# GORACE: a -race binary otherwise sleeps 1 s at every exit, and the CLI
# scripts start hundreds of them; testscript passes GORACE through.
# ART_MCP_TS_SDK: where the artagent mcp tests find the TypeScript MCP SDK
# and the MCP Inspector (.ci/run installs them; locally `make mcp-clients`);
# without it those two tests skip, except under CI. ART_OLLAMA: the ollama
# binary of the artagent integration test (scripts/ollama.sh builds it;
# .ci/run sets it), which runs for minutes on a busy machine: hence the
# package timeout of 30m instead of go test's 10m.
unit:
	ART_MCP_TS_SDK="$${ART_MCP_TS_SDK:-$(if $(wildcard $(MCP_CLIENTS)/node_modules),$(MCP_CLIENTS))}" \
	GORACE=atexit_sleep_ms=0 $(GO) test -race -count=1 -timeout 30m ./...

# The node packages of the artagent mcp client tests (versions as in .ci/run).
MCP_CLIENTS ?= $(CURDIR)/.cache/mcp-clients
mcp-clients:
	mkdir -p $(MCP_CLIENTS)
	cd $(MCP_CLIENTS) && npm install --silent --no-audit --no-fund --no-save @modelcontextprotocol/sdk@1.32.2 @modelcontextprotocol/inspector@2.12.0 node@22

demo: build
	@PATH="$(CURDIR)/$(BIN):$$PATH" bash scripts/demo.sh

fuzz:
	@bash scripts/fuzz.sh $(FUZZTIME)

bench: build
	@PATH="$(CURDIR)/$(BIN):$$PATH" bash scripts/bench.sh

# make mutants [MUTANT_PKGS="./lib/fsx ./lib/jsonx"]: mutation testing with
# the pinned gremlins over the packages that keep durable state or guard a
# boundary. Each mutant is KILLED (a test failed), LIVED (none did),
# NOT COVERED or TIMED OUT; docs/mutants.md lists the survivors that are
# equivalent and why. Slow: every covered mutant runs its package's tests.
MUTANT_PKGS ?= ./lib/fsx ./lib/jsonx ./lib/queue/stateindex ./lib/queue/file ./lib/queue ./lib/obs/redact ./lib/execx
GREMLINS    := $(GO) run github.com/go-gremlins/gremlins/cmd/gremlins@$(GREMLINS_VERSION)
mutants:
	@for p in $(MUTANT_PKGS); do echo "== $$p"; $(GREMLINS) unleash --workers 1 --timeout-coefficient 5 $$p || exit 1; done

# The queue and goal kill -9 soaks as one run: make crash N=200. The soaks
# stop artq at failpoints, which exist only in a build with -tags failpoint:
# that artq goes to $(BIN)/failpoint/ (never into $(BIN) or an install) and
# comes first on the soaks' PATH.
crash: build
	CGO_ENABLED=0 $(GO) build -trimpath -tags failpoint -o $(BIN)/failpoint/ ./cmd/artq
	@PATH="$(CURDIR)/$(BIN)/failpoint:$(CURDIR)/$(BIN):$$PATH" bash scripts/crash.sh $(N)

release: build
	$(BIN)/artrelease build --ref HEAD --out dist --force
	$(BIN)/artrelease verify dist
	cd dist && sha256sum -c --quiet SHA256SUMS

clean:
	rm -rf $(BIN)
