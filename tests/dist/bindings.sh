#!/usr/bin/env bash
# Downstream-user test of the Node, Go and Java bindings (issue 11, CONTRACT §3 "Installing"):
# each language builds a project of its own, in its own directory outside the checkout, against an
# installed (and moved) prefix, then runs
#   - the replayed generate_text (recordings/demo.jsonl)      -> "text: Hello!"
#   - a failing call (port 1 on loopback is closed)           -> its native chain down to
#                                                                "source 0 ConnectionRefusedError"
#   - once with no library findable                           -> "error: 207 RuntimeInitError: ..."
# Programs run under `env -i` (PATH and HOME only, plus what each case names).
#
# usage: tests/dist/bindings.sh PREFIX SRC WORK [node|go|java ...]
#   PREFIX  an installed prefix (lib/libaimux.so.1, lib/pkgconfig/aimux.pc)
#   SRC     the checkout (or a copy of it) the bindings are taken from
#   WORK    an empty scratch directory outside SRC
set -euo pipefail

PREFIX=$(cd "$1" && pwd)
SRC=$(cd "$2" && pwd)
WORK=$(mkdir -p "$3" && cd "$3" && pwd)
shift 3
LANGS=("$@")
[ ${#LANGS[@]} -gt 0 ] || LANGS=(node go java)

JAVA_HOME=${AIMUX_JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
RECORDING=$WORK/demo.jsonl
cp "$SRC/recordings/demo.jsonl" "$RECORDING"
CLEAN_ENV=(env -i "PATH=$PATH" "HOME=$HOME")

step() { printf '\n== dist-bindings: %s\n' "$*"; }
fail() { printf 'dist-bindings FAILED: %s\n' "$*" >&2; exit 1; }

# expect_ok NAME OUTPUT: the replay's text, then the failing call's chain down to the OS error.
expect_ok() {
    local name=$1 out=$2
    printf '%s\n' "$out" | sed 's/^/    /'
    grep -qx 'text: Hello!' <<<"$out" || fail "$name: no 'text: Hello!' from the replayed generate_text"
    grep -q '^chain: aimux 11 AI_APICallError: ' <<<"$out" || fail "$name: no AI_APICallError in the failing call's chain"
    [[ $(grep '^chain: ' <<<"$out" | tail -n 1) == 'chain: source 0 ConnectionRefusedError: '* ]] ||
        fail "$name: the failing call's chain does not end at ConnectionRefusedError"
}

# expect_207 NAME OUTPUT: every binding's answer when no library can be found.
expect_207() {
    local name=$1 out=$2
    printf '%s\n' "$out" | sed 's/^/    /'
    grep -q '^error: 207 RuntimeInitError: aimux: cannot load libaimux\. Tried: ' <<<"$out" ||
        fail "$name: no 207 RuntimeInitError naming what was tried"
    grep -q 'libaimux\.so\.1 through the system loader' <<<"$out" || fail "$name: the 207 does not name the system loader"
    grep -q 'Fix: ' <<<"$out" || fail "$name: the 207 does not say how to fix it"
}

# ---------------------------------------------------------------------------------------------
run_node() {
    step "node: npm pack, npm install the tarball into a fresh project"
    rm -rf "$WORK/node-binding" "$WORK/node-app"
    mkdir -p "$WORK/node-binding" "$WORK/node-app"
    (cd "$SRC/bindings/node" && tar --exclude=./node_modules --exclude=./build -cf - .) | tar -xf - -C "$WORK/node-binding"
    local tgz
    tgz=$(cd "$WORK/node-binding" && npm pack --silent --pack-destination "$WORK")
    cd "$WORK/node-app"
    printf '{"name":"node-app","private":true,"type":"module"}\n' >package.json
    npm install --no-audit --no-fund --prefer-offline --loglevel=error "$WORK/$tgz"
    cat >app.mjs <<'EOF'
import { call } from 'aimux-ops';

const model = { provider: 'openai', modelId: 'gpt-4o-mini', baseURL: 'http://127.0.0.1:1/v1' };
try {
  const r = await call('generate_text', { model, prompt: 'Say hello in one word.', recording: { mode: 'replay', path: process.argv[2] } });
  console.log(`text: ${r.text}`);
} catch (e) {
  console.log(`error: ${e.code} ${e.name}: ${e.message}`);
  process.exit(3);
}
try {
  await call('generate_text', { model: { ...model, apiKey: 'sk-test' }, prompt: 'hi', maxRetries: 1, retry: { initialDelayMs: 10 } });
  console.log('the failing call succeeded');
} catch (e) {
  for (let link = e; link; link = link.cause) console.log(`chain: ${link.kind ?? 'source'} ${link.code ?? 0} ${link.name}: ${link.message}`);
}
EOF
    step "node: libaimux.so.1 through LD_LIBRARY_PATH (no AIMUX_LIB)"
    expect_ok node "$("${CLEAN_ENV[@]}" "LD_LIBRARY_PATH=$PREFIX/lib" node app.mjs "$RECORDING")"
    step "node: no library findable"
    local out rc=0
    out=$("${CLEAN_ENV[@]}" node app.mjs "$RECORDING") || rc=$?
    [ "$rc" = 3 ] || fail "node: exit $rc without a library"
    expect_207 node "$out"
}

# ---------------------------------------------------------------------------------------------
GO_MOD=github.com/aimux-ops/aimux-ops/bindings/go
GO_VERSION=v0.1.0

go_app() { # DIR: a Go module example.com/app that uses the binding
    mkdir -p "$1"
    cat >"$1/main.go" <<'EOF'
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	aimux "github.com/aimux-ops/aimux-ops/bindings/go"
)

func main() {
	ctx := context.Background()
	model := map[string]any{"provider": "openai", "modelId": "gpt-4o-mini", "baseURL": "http://127.0.0.1:1/v1"}
	res, err := aimux.Call(ctx, "generate_text", map[string]any{"model": model, "prompt": "Say hello in one word.",
		"recording": map[string]any{"mode": "replay", "path": os.Args[1]}})
	if err != nil {
		var e *aimux.Error
		if errors.As(err, &e) {
			fmt.Printf("error: %d %s: %s\n", e.Code, e.Name, e.Message)
		} else {
			fmt.Printf("error: %v\n", err)
		}
		os.Exit(3)
	}
	var r struct{ Text string }
	if err := json.Unmarshal(res, &r); err != nil {
		panic(err)
	}
	fmt.Printf("text: %s\n", r.Text)
	failing := map[string]any{"model": map[string]any{"provider": "openai", "modelId": "gpt-4o-mini",
		"baseURL": "http://127.0.0.1:1/v1", "apiKey": "sk-test"}, "prompt": "hi", "maxRetries": 1,
		"retry": map[string]any{"initialDelayMs": 10}}
	_, err = aimux.Call(ctx, "generate_text", failing)
	if err == nil {
		fmt.Println("the failing call succeeded")
	}
	for ; err != nil; err = errors.Unwrap(err) {
		switch e := err.(type) {
		case *aimux.Error:
			fmt.Printf("chain: %s %d %s: %s\n", e.Kind, e.Code, e.Name, e.Message)
		case *aimux.SourceError:
			fmt.Printf("chain: source 0 %s: %s\n", e.Type, e.Message)
		default:
			fmt.Printf("chain: ? %T: %v\n", err, err)
		}
	}
}
EOF
}

run_go() {
    local bin=$WORK/go-bin
    rm -rf "$WORK/go-binding" "$WORK/go-app" "$WORK/go-proxy" "$WORK/go-cache-app" "$bin"
    mkdir -p "$WORK/go-binding" "$bin"
    (cd "$SRC/bindings/go" && tar --exclude=./build -cf - .) | tar -xf - -C "$WORK/go-binding"
    export GOTOOLCHAIN=local GOFLAGS= GONOSUMDB= GOPRIVATE=

    step "go: a module with replace => a copy of the binding; go mod vendor; -trimpath; libdir from pkg-config"
    go_app "$WORK/go-app"
    cd "$WORK/go-app"
    printf 'module example.com/app\n\ngo 1.24\n\nrequire %s %s\n\nreplace %s => ../go-binding\n' \
        "$GO_MOD" "$GO_VERSION" "$GO_MOD" >go.mod
    go mod vendor
    [ -f "vendor/$GO_MOD/aimux.h" ] || fail "go: go mod vendor left out aimux.h"
    local libdir
    libdir=$(PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig pkg-config --variable=libdir aimux)
    libdir=$(cd "$libdir" && pwd)
    go build -mod=vendor -trimpath -ldflags "-X '$GO_MOD.buildLibDir=$libdir'" -o "$bin/app-pkgconfig" .
    if strings "$bin/app-pkgconfig" | grep -q "$WORK/go-binding"; then fail "go: -trimpath binary names the source directory"; fi
    step "go: the pkg-config libdir recorded at build time (no LD_LIBRARY_PATH, no AIMUX_LIB)"
    expect_ok go "$("${CLEAN_ENV[@]}" "$bin/app-pkgconfig" "$RECORDING")"

    step "go: the same module from a module cache (GOPROXY=file://, a fresh GOMODCACHE), -trimpath"
    mkdir -p "$WORK/go-proxy/$GO_MOD/@v"
    (cd "$WORK/go-binding" && python3 - "$WORK/go-proxy/$GO_MOD/@v/$GO_VERSION.zip" "$GO_MOD@$GO_VERSION" <<'EOF'
import os, sys, zipfile
out, root = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
    for d, dirs, files in os.walk("."):
        dirs[:] = sorted(x for x in dirs if x != "build")
        for f in sorted(files):
            p = os.path.normpath(os.path.join(d, f))
            z.write(p, f"{root}/{p}")
EOF
    )
    cp "$WORK/go-binding/go.mod" "$WORK/go-proxy/$GO_MOD/@v/$GO_VERSION.mod"
    printf '{"Version":"%s","Time":"2026-01-01T00:00:00Z"}\n' "$GO_VERSION" >"$WORK/go-proxy/$GO_MOD/@v/$GO_VERSION.info"
    printf '%s\n' "$GO_VERSION" >"$WORK/go-proxy/$GO_MOD/@v/list"
    go_app "$WORK/go-cache-app"
    cd "$WORK/go-cache-app"
    printf 'module example.com/app\n\ngo 1.24\n\nrequire %s %s\n' "$GO_MOD" "$GO_VERSION" >go.mod
    local cache=$WORK/go-modcache
    GOMODCACHE=$cache GOPROXY=file://$WORK/go-proxy GOSUMDB=off go mod tidy
    GOMODCACHE=$cache GOPROXY=off GOSUMDB=off go build -trimpath -o "$bin/app" .
    [ -f "$cache/$GO_MOD@$GO_VERSION/aimux.h" ] || fail "go: the binding was not built from the module cache"
    step "go: libaimux.so.1 through LD_LIBRARY_PATH (no AIMUX_LIB)"
    expect_ok go "$("${CLEAN_ENV[@]}" "LD_LIBRARY_PATH=$PREFIX/lib" "$bin/app" "$RECORDING")"
    step "go: no library findable"
    local out rc=0
    out=$("${CLEAN_ENV[@]}" "$bin/app" "$RECORDING") || rc=$?
    [ "$rc" = 3 ] || fail "go: exit $rc without a library"
    expect_207 go "$out"
    step "go: CGO_ENABLED=0 says cgo is needed"
    rc=0
    out=$(GOMODCACHE=$cache GOPROXY=off GOSUMDB=off CGO_ENABLED=0 go build -o /dev/null . 2>&1) || rc=$?
    printf '%s\n' "$out" | head -n 3 | sed 's/^/    /'
    [ "$rc" != 0 ] || fail "go: a CGO_ENABLED=0 build succeeded"
    grep -q 'this package needs cgo: build with CGO_ENABLED=1' <<<"$(printf '%s\n' "$out" | sed -n 2p)" ||
        fail "go: the first CGO_ENABLED=0 error is not the cgo message"
    chmod -R u+w "$cache" && rm -rf "$cache"
}

# ---------------------------------------------------------------------------------------------
run_java() {
    local m2=$WORK/m2
    rm -rf "$WORK/java-binding" "$WORK/java-app" "$m2"
    mkdir -p "$WORK/java-binding" "$m2"
    # A local Maven repository of its own, seeded from ~/.m2 (plugins, Jackson) when there is one.
    [ -d "$HOME/.m2/repository" ] && cp -a "$HOME/.m2/repository/." "$m2/"
    rm -rf "$m2/dev/aimux"
    (cd "$SRC/bindings/java" && tar --exclude=./target -cf - .) | tar -xf - -C "$WORK/java-binding"
    export JAVA_HOME MAVEN_OPTS=--sun-misc-unsafe-memory-access=allow
    local mvn=(mvn -B -q -Dstyle.color=never "-Dmaven.repo.local=$m2")

    step "java: mvn install of a copy of the binding into a local repository of its own"
    (cd "$WORK/java-binding" && "${mvn[@]}" -DskipTests "-Dpython=python3" "-Daimux.manifest=$SRC/schema/manifest.json" install)
    [ -f "$m2/dev/aimux/aimux-ops/0.1.0/aimux-ops-0.1.0.jar" ] || fail "java: the artifact is not in the local repository"

    step "java: a Maven project depending on dev.aimux:aimux-ops:0.1.0"
    mkdir -p "$WORK/java-app/src/main/java/app"
    cat >"$WORK/java-app/pom.xml" <<'EOF'
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>app</groupId>
  <artifactId>java-app</artifactId>
  <version>1</version>
  <properties>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
    <maven.compiler.release>22</maven.compiler.release>
  </properties>
  <dependencies>
    <dependency><groupId>dev.aimux</groupId><artifactId>aimux-ops</artifactId><version>0.1.0</version></dependency>
  </dependencies>
  <build>
    <finalName>app</finalName>
    <plugins>
      <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-resources-plugin</artifactId><version>3.5.0</version></plugin>
      <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-compiler-plugin</artifactId><version>3.14.0</version></plugin>
      <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-surefire-plugin</artifactId><version>3.5.4</version></plugin>
      <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-jar-plugin</artifactId><version>3.4.2</version></plugin>
      <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-dependency-plugin</artifactId><version>3.8.1</version></plugin>
    </plugins>
  </build>
</project>
EOF
    cat >"$WORK/java-app/src/main/java/app/App.java" <<'EOF'
package app;

import dev.aimux.Aimux;
import dev.aimux.AimuxException;
import dev.aimux.AimuxNode;
import dev.aimux.AimuxSourceException;

import java.util.Map;

public class App {
    public static void main(String[] args) {
        Map<String, Object> model = Map.of("provider", "openai", "modelId", "gpt-4o-mini", "baseURL", "http://127.0.0.1:1/v1");
        try {
            Map<String, Object> r = Aimux.call("generate_text", Map.of("model", model, "prompt", "Say hello in one word.",
                    "recording", Map.of("mode", "replay", "path", args[0])));
            System.out.println("text: " + r.get("text"));
        } catch (AimuxException e) {
            System.out.println("error: " + e.code() + " " + e.name() + ": " + e.getMessage());
            System.exit(3);
        }
        Map<String, Object> failingModel = Map.of("provider", "openai", "modelId", "gpt-4o-mini",
                "baseURL", "http://127.0.0.1:1/v1", "apiKey", "sk-test");
        try {
            Aimux.call("generate_text", Map.of("model", failingModel, "prompt", "hi", "maxRetries", 1,
                    "retry", Map.of("initialDelayMs", 10)));
            System.out.println("the failing call succeeded");
        } catch (AimuxException e) {
            for (Throwable t = e; t != null; t = t.getCause()) {
                if (t instanceof AimuxNode n) {
                    System.out.println("chain: " + n.kind() + " " + n.code() + " " + n.name() + ": " + n.getMessage());
                } else if (t instanceof AimuxSourceException s) {
                    System.out.println("chain: source 0 " + s.type() + ": " + s.getMessage());
                } else {
                    System.out.println("chain: ? " + t);
                }
            }
        }
    }
}
EOF
    (cd "$WORK/java-app" && "${mvn[@]}" package dependency:copy-dependencies)
    local cp="$WORK/java-app/target/app.jar:$WORK/java-app/target/dependency/*"
    local java=("${CLEAN_ENV[@]}" "$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -cp "$cp")
    cd "$WORK/java-app"
    step "java: libaimux.so.1 through -Djava.library.path (no AIMUX_LIB, no LD_LIBRARY_PATH)"
    expect_ok java "$("${java[@]}" "-Djava.library.path=$PREFIX/lib" app.App "$RECORDING")"
    step "java: no library findable"
    local out rc=0
    out=$("${java[@]}" app.App "$RECORDING") || rc=$?
    [ "$rc" = 3 ] || fail "java: exit $rc without a library"
    expect_207 java "$out"

    local old
    old=$(ls -d /usr/lib/jvm/java-1[0-9]-openjdk-* /usr/lib/jvm/java-2[01]-openjdk-* 2>/dev/null | head -n 1 || true)
    if [ -n "$old" ]; then
        step "java: the build on an older JDK ($old) stops with the enforcer's message"
        rc=0
        out=$(cd "$WORK/java-binding" && JAVA_HOME=$old MAVEN_OPTS= "${mvn[@]}" validate 2>&1) || rc=$?
        grep 'needs JDK 22' <<<"$out" | sed 's/^/    /'
        [ "$rc" != 0 ] && grep -q 'aimux-ops needs JDK 22 or newer' <<<"$out" || fail "java: no enforcer message on $old"
    else
        step "java: no JDK older than 22 installed: the enforcer message is not checked here"
    fi
}

for lang in "${LANGS[@]}"; do
    "run_$lang"
done
printf '\ndist-bindings: %s passed\n' "${LANGS[*]}"
