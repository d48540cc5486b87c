# Kotlin: the Java binding installed with the library inside (`make -C bindings/java install
# PREFIX=<the installed tree>`) and the Kotlin module over it (`make -C bindings/kotlin install`)
# into a local Maven repository of the step's own; a Maven project depending on
# dev.aimux:aimux-ops-kotlin:0.1.0 compiles README's Kotlin first program (kotlinc -Werror) and runs it,
# with no JVM flag and no environment variable but the key, against the fault server: generate,
# stream, a 429 with retry-after, a refused connection.
set -euo pipefail
. "$AIMUX_DIST_TESTS/bindings-lib.sh"
export JAVA_HOME="${AIMUX_JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
export MAVEN_OPTS=--sun-misc-unsafe-memory-access=allow
M2="$PWD/m2"
MVN=(mvn -B -q -Dstyle.color=never "-Dmaven.repo.local=$M2")
mvnq() { "${MVN[@]}" "$@" 2>&1 | sed $'s/\e\\[[0-9;]*m//g'; }
case "$1" in
package)
  rm -rf "$M2" && mkdir -p "$M2"
  if [ -d "$HOME/.m2/repository" ]; then cp -a "$HOME/.m2/repository/." "$M2/"; fi
  rm -rf "$M2/dev/aimux"
  bindings_copy "$AIMUX_DIST_SRC/bindings/java" java target
  bindings_copy "$AIMUX_DIST_SRC/bindings/kotlin" kotlin target
  { make -s -C java install MAVEN_REPO_LOCAL="$M2" PREFIX="$AIMUX_DIST_PREFIX" \
      && make -s -C kotlin install MAVEN_REPO_LOCAL="$M2"; } > install.log 2>&1 \
    || { sed $'s/\e\\[[0-9;]*m//g' install.log; echo "make install failed"; exit 1; }
  [ -f "$M2/dev/aimux/aimux-ops-kotlin/0.1.0/aimux-ops-kotlin-0.1.0.jar" ] || { echo "dev.aimux:aimux-ops-kotlin is not installed"; exit 1; }
  echo "   make install: $(cd "$M2" && ls dev/aimux/*/0.1.0/*.jar | tr '\n' ' ')"
  awk '/<!-- first-program:kotlin -->/ {on=1; next} on && /^```kotlin/ {code=1; next} code && /^```/ {exit} code' \
    "$AIMUX_DIST_SRC/README.md" > FirstProgram.kt
  grep -q '^fun main' FirstProgram.kt || { echo "README.md has no Kotlin first program"; exit 1; }
  cp "$AIMUX_DIST_SRC/tests/fault_server.py" .
  rm -rf java kotlin ;;
run)
  rm -rf app && mkdir -p app/src/main/kotlin/app
  cp "$AIMUX_DIST_TESTS/kotlin/pom.xml" app/
  cp FirstProgram.kt app/src/main/kotlin/app/
  (cd app && mvnq package dependency:copy-dependencies)
  CP="$PWD/app/target/app.jar:$PWD/app/target/dependency/*"
  "$AIMUX_DIST_PYTHON" fault_server.py --port 0 > fault.out 2> fault.err & fault_pid=$!
  trap 'kill $fault_pid 2>/dev/null || true' EXIT
  for _ in $(seq 1 600); do grep -q 'fault server on' fault.out && break; sleep 0.1; done
  base="$(grep -o 'http://127\.0\.0\.1:[0-9]*' fault.out | head -n 1)"
  [ -n "$base" ] || { cat fault.out fault.err; echo "the fault server did not start"; exit 1; }
  rm -rf home && mkdir home
  rc=0; out="$(dist_run / "PATH=$PATH" "HOME=$PWD/home" OPENAI_API_KEY=sk-local "$JAVA_HOME/bin/java" -cp "$CP" app.FirstProgramKt "$base/v1" 2>&1)" || rc=$?
  printf '%s\n' "$out" | sed 's/^/   /'
  [ "$rc" = 0 ] || { echo "first program: exit $rc"; exit 1; }
  grep -qx 'text: Hello! (stop, 14 tokens)' <<<"$out" || { echo "first program: no generated text"; exit 1; }
  grep -qx 'Hello!' <<<"$out" || { echo "first program: no streamed text"; exit 1; }
  grep -qx 'status 429, retryable true, retry after 2 s' <<<"$out" || { echo "first program: no 429 with its retry-after"; exit 1; }
  grep -q '^caused by dev.aimux.errors.RetryException \[aimux 14 AI_RetryError\]' <<<"$out" || { echo "first program: no retry error"; exit 1; }
  [[ "$(grep '^caused by ' <<<"$out" | tail -n 1)" == 'caused by dev.aimux.AimuxSourceException [ConnectionRefusedError]'* ]] \
    || { echo "first program: the chain does not end at ConnectionRefusedError"; exit 1; }
  echo "   README's Kotlin first program ($(grep -c '' app/src/main/kotlin/app/FirstProgram.kt) lines): ok" ;;
esac
