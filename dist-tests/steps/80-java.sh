# Java: the binding installed by `make -C bindings/java install PREFIX=<the installed tree>` (from
# the checkout copy, on JDK 25: the jar carries libaimux.so.1 and its payload for linux-x64) into a
# local Maven repository of the step's own; a Maven project depending on dev.aimux:aimux-ops:0.1.0,
# built and run on JDK 25 (the FFM backend) and on JDK 17 (JNA), each with no JVM flag and no
# environment variable (the jar's library, extracted under ~/.cache/aimux/<hash>/); with
# -Djava.library.path, that directory's library first; the same program as a named module run
# from the module path (no --add-modules, no flag on JDK 17); the jar without its library and none
# findable, a 207. Building the binding on a JDK older than 22 stops with the enforcer's message
# (mvn) and `make install` with the Makefile's own, before any JVM option can fail. README's Java
# first program (typed API), compiled with -Xlint:all -Werror, runs on both JDKs against the fault
# server: generate, stream, a 429, a refused connection.
set -euo pipefail
. "$AIMUX_DIST_TESTS/bindings-lib.sh"
export JAVA_HOME="${AIMUX_JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
export MAVEN_OPTS=--sun-misc-unsafe-memory-access=allow
# The JDK older than 22 (17 here) the consumer also runs on; AIMUX_OLD_JAVA_HOME= names another.
OLD_JDK="${AIMUX_OLD_JAVA_HOME:-$(ls -d /usr/lib/jvm/java-1[7-9]-openjdk-* /usr/lib/jvm/java-2[01]-openjdk-* 2>/dev/null | head -n 1 || true)}"
M2="$PWD/m2"
MVN=(mvn -B -q -Dstyle.color=never "-Dmaven.repo.local=$M2")
mvnq() { "${MVN[@]}" "$@" 2>&1 | sed $'s/\e\\[[0-9;]*m//g'; }  # Maven 3.8 on JDK 25 still emits colour resets
case "$1" in
package)
  # Seeded from ~/.m2 (plugins, Jackson) so that the step does not download what is there already.
  rm -rf "$M2" && mkdir -p "$M2"
  if [ -d "$HOME/.m2/repository" ]; then cp -a "$HOME/.m2/repository/." "$M2/"; fi
  rm -rf "$M2/dev/aimux"
  bindings_copy "$AIMUX_DIST_SRC/bindings/java" binding target
  make -s -C binding install MAVEN_REPO_LOCAL="$M2" PREFIX="$AIMUX_DIST_PREFIX" > install.log 2>&1 \
    || { sed $'s/\e\\[[0-9;]*m//g' install.log; echo "make install PREFIX= failed"; exit 1; }
  unzip -l "$M2/dev/aimux/aimux-ops/0.1.0/aimux-ops-0.1.0.jar" > jar.txt
  grep -q ' dev/aimux/native/linux-x64/libaimux.so.1$' jar.txt || { echo "the jar carries no libaimux.so.1"; exit 1; }
  grep -q ' dev/aimux/native/linux-x64/aimux/python[0-9.]*/aimux_ops/__init__.py$' jar.txt || { echo "the jar carries no payload"; exit 1; }
  [ -f "$M2/dev/aimux/aimux-ops/0.1.0/aimux-ops-0.1.0.jar" ] || { echo "dev.aimux:aimux-ops is not installed"; exit 1; }
  echo "   make install PREFIX=: $(cd "$M2" && ls dev/aimux/aimux-ops/0.1.0/*.jar) ($(du -k "$M2/dev/aimux/aimux-ops/0.1.0/aimux-ops-0.1.0.jar" | cut -f1) KiB, the library for linux-x64 inside)"
  old="$OLD_JDK"
  if [ -n "$old" ]; then
    rc=0; out="$(cd binding && JAVA_HOME="$old" MAVEN_OPTS= mvnq validate)" || rc=$?
    [ "$rc" != 0 ] && grep -q 'building aimux-ops needs JDK 22 or newer' <<<"$out" \
      || { echo "$out"; echo "no enforcer message on $old"; exit 1; }
    echo "   mvn on $old: $(grep -o 'building aimux-ops needs JDK 22 or newer.*; this is JDK [0-9.]*' <<<"$out")"
    # the Makefile, with the caller's MAVEN_OPTS unset: its JDK check speaks first
    rc=0; out="$(env -u MAVEN_OPTS JAVA_HOME="$old" make -s -C binding install MAVEN_REPO_LOCAL="$M2" 2>&1)" || rc=$?
    first="$(grep -m 1 -v '^make' <<<"$out" || true)"
    [ "$rc" != 0 ] && [[ "$first" == "building aimux-ops needs JDK 22 or newer (it compiles the FFM backend; the jar it builds runs on JDK 17+); this is JDK "[0-9]*" at JAVA_HOME=$old. Set JAVA_HOME to a JDK 22+"* ]] \
      || { echo "$out"; echo "make install on $old: not the JDK check first"; exit 1; }
    echo "   make install on $old: ${first:0:120}…"
  else
    echo "   SKIPPED (not counted): no JDK older than 22 here to show the enforcer's message"
  fi
  rm -rf binding
  # README's first program (the code block after <!-- first-program:java -->) and the fault server it runs against
  awk '/<!-- first-program:java -->/ {on=1; next} on && /^```java/ {code=1; next} code && /^```/ {exit} code' \
    "$AIMUX_DIST_SRC/README.md" > FirstProgram.java
  grep -q '^public class FirstProgram' FirstProgram.java || { echo "README.md has no Java first program"; exit 1; }
  cp "$AIMUX_DIST_SRC/tests/fault_server.py" . ;;
run)
  if [ -z "$OLD_JDK" ]; then echo "   no JDK 17-21 here (AIMUX_OLD_JAVA_HOME=): the JDK 17 runs cannot be shown"; exit 1; fi
  # The jar without its library (for the 207 runs), from the installed one.
  rm -rf nolib && mkdir nolib
  "$AIMUX_DIST_PYTHON" - "$M2/dev/aimux/aimux-ops/0.1.0/aimux-ops-0.1.0.jar" nolib/aimux-ops-0.1.0.jar <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as src, zipfile.ZipFile(sys.argv[2], "w", zipfile.ZIP_DEFLATED) as out:
    for item in src.infolist():
        if not item.filename.startswith("dev/aimux/native/"):
            out.writestr(item, src.read(item))
PY
  "$AIMUX_DIST_PYTHON" fault_server.py --port 0 > fault.out 2> fault.err & fault_pid=$!
  trap 'kill $fault_pid 2>/dev/null || true' EXIT
  for _ in $(seq 1 600); do grep -q 'fault server on' fault.out && break; sleep 0.1; done
  base="$(grep -o 'http://127\.0\.0\.1:[0-9]*' fault.out | head -n 1)"
  [ -n "$base" ] || { cat fault.out fault.err; echo "the fault server did not start"; exit 1; }
  for jdk in "$JAVA_HOME" "$OLD_JDK"; do
    v="$("$jdk/bin/java" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java\.specification\.version = //p')"
    label="Java $v"
    opts=; [ "$v" -ge 23 ] && opts=--sun-misc-unsafe-memory-access=allow
    d="jdk$v" && rm -rf "$d" && mkdir -p "$d/app/src/main/java/app"
    cp "$AIMUX_DIST_TESTS/java/pom.xml" "$d/app/"
    cp "$AIMUX_DIST_TESTS/java/App.java" FirstProgram.java "$d/app/src/main/java/app/"
    (cd "$d/app" && JAVA_HOME="$jdk" MAVEN_OPTS="$opts" mvnq package dependency:copy-dependencies)   # javac -Xlint:all -Werror (the pom)
    CP="$PWD/$d/app/target/app.jar:$PWD/$d/app/target/dependency/*"
    # README's first program against the fault server: generate, stream, a 429 with retry-after, a refused connection
    fhome="$PWD/$d/fhome" && mkdir "$fhome"
    rc=0; out="$(dist_run / "PATH=$PATH" "HOME=$fhome" OPENAI_API_KEY=sk-local "$jdk/bin/java" -cp "$CP" app.FirstProgram "$base/v1" 2>&1)" || rc=$?
    printf '%s\n' "$out" | sed 's/^/   /'
    [ "$rc" = 0 ] || { echo "$label first program: exit $rc"; exit 1; }
    grep -qx 'text: Hello! (stop, 14 tokens)' <<<"$out" || { echo "first program: no generated text"; exit 1; }
    grep -qx 'Hello!' <<<"$out" || { echo "first program: no streamed text"; exit 1; }
    grep -qx 'status 429, retryable true, retry after 2 s' <<<"$out" || { echo "first program: no 429 with its retry-after"; exit 1; }
    grep -q '^caused by dev.aimux.errors.RetryException \[aimux 14 AI_RetryError\]' <<<"$out" || { echo "first program: no retry error"; exit 1; }
    [[ "$(grep '^caused by ' <<<"$out" | tail -n 1)" == 'caused by dev.aimux.AimuxSourceException [ConnectionRefusedError]'* ]] \
      || { echo "first program: the chain does not end at ConnectionRefusedError"; exit 1; }
    echo "   $label: README's Java first program ($(grep -c '' FirstProgram.java) lines): ok"
    # no JVM flag, no environment variable (a HOME of its own, for the cache it extracts into)
    home="$PWD/$d/home" && mkdir "$home"
    for n in 1 2; do   # the first run extracts the jar's library, the second uses it
      out="$(dist_run / "PATH=$PATH" "HOME=$home" "$jdk/bin/java" -cp "$CP" app.App "$AIMUX_DIST_RECORDING" 2>&1)"
      bindings_expect_ok "$label, Maven project, no JVM flag (run $n)" "$out"
      grep -qE "^library: $home/\.cache/aimux/[0-9a-f]{64}/libaimux\.so\.1$" <<<"$out" \
        || { echo "not the jar's library, extracted under $home/.cache/aimux"; exit 1; }
    done
    [ "$(ls "$home/.cache/aimux" | wc -l)" = 1 ] || { ls -la "$home/.cache/aimux"; echo "not one extracted tree"; exit 1; }
    out="$(bindings_run / "$jdk/bin/java" -cp "$CP" "-Djava.library.path=$AIMUX_DIST_PREFIX/lib" app.App "$AIMUX_DIST_RECORDING" 2>&1)"
    bindings_expect_ok "$label, -Djava.library.path" "$out"
    grep -qx "library: $AIMUX_DIST_PREFIX/lib/libaimux.so.1" <<<"$out" || { echo "java.library.path's library not first"; exit 1; }
    # the same program as a module (module app { requires dev.aimux; }) on the module path, no flag
    mkdir -p "$d/modapp/src/app/app"
    cp "$AIMUX_DIST_TESTS/java/App.java" "$d/modapp/src/app/app/"
    printf 'module app {\n    requires dev.aimux;\n}\n' > "$d/modapp/src/app/module-info.java"
    "$jdk/bin/javac" -p "$d/app/target/dependency" -d "$d/modapp/out" "$d/modapp/src/app/module-info.java" "$d/modapp/src/app/app/App.java"
    out="$(dist_run / "PATH=$PATH" "HOME=$home" "$jdk/bin/java" \
       -p "$PWD/$d/modapp/out:$PWD/$d/app/target/dependency" -m app/app.App "$AIMUX_DIST_RECORDING" 2>&1)"
    bindings_expect_ok "$label, module path (java -p ... -m app/app.App), no flag" "$out"
    grep -qE "^library: $home/\.cache/aimux/[0-9a-f]{64}/libaimux\.so\.1$" <<<"$out" || { echo "not the jar's library"; exit 1; }
    # the jar without its library, and none findable: a 207
    NOLIB_CP="$PWD/$d/app/target/app.jar:$PWD/nolib/aimux-ops-0.1.0.jar:$(ls "$PWD/$d"/app/target/dependency/{jackson,jna}-*.jar | tr '\n' ':')"
    rc=0; out="$(bindings_run / "$jdk/bin/java" -cp "$NOLIB_CP" app.App "$AIMUX_DIST_RECORDING" 2>&1)" || rc=$?
    [ "$rc" = 3 ] || { echo "$out"; echo "$label: exit $rc without a library"; exit 1; }
    bindings_expect_207 "$label" "$out"
  done ;;
esac
