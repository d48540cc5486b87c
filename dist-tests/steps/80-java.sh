# Java: the binding `mvn install`ed (from the checkout copy) into a local Maven repository of the
# step's own; a Maven project depending on dev.aimux:aimux-ops:0.1.0; libaimux.so.1 found through
# -Djava.library.path (no AIMUX_LIB, no LD_LIBRARY_PATH); the same program as a named module run
# from the module path (no --add-modules); with no library findable, a 207; on a JDK older than 22
# the build stops with the enforcer's message (mvn) and `make install` with the Makefile's own,
# before any JVM option can fail.
set -euo pipefail
. "$AIMUX_DIST_TESTS/bindings-lib.sh"
export JAVA_HOME="${AIMUX_JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
export MAVEN_OPTS=--sun-misc-unsafe-memory-access=allow
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
  (cd binding && mvnq -DskipTests install)
  [ -f "$M2/dev/aimux/aimux-ops/0.1.0/aimux-ops-0.1.0.jar" ] || { echo "dev.aimux:aimux-ops is not installed"; exit 1; }
  echo "   mvn install: $(cd "$M2" && ls dev/aimux/aimux-ops/0.1.0/*.jar)"
  old="$(ls -d /usr/lib/jvm/java-1[0-9]-openjdk-* /usr/lib/jvm/java-2[01]-openjdk-* 2>/dev/null | head -n 1 || true)"
  if [ -n "$old" ]; then
    rc=0; out="$(cd binding && JAVA_HOME="$old" MAVEN_OPTS= mvnq validate)" || rc=$?
    [ "$rc" != 0 ] && grep -q 'aimux-ops needs JDK 22 or newer' <<<"$out" \
      || { echo "$out"; echo "no enforcer message on $old"; exit 1; }
    echo "   on $old: $(grep -o 'aimux-ops needs JDK 22 or newer[^;]*; this is JDK [0-9.]*' <<<"$out")"
    # the Makefile, with the caller's MAVEN_OPTS unset: its JDK check speaks first
    rc=0; out="$(env -u MAVEN_OPTS JAVA_HOME="$old" make -s -C binding install MAVEN_REPO_LOCAL="$M2" 2>&1)" || rc=$?
    first="$(grep -m 1 -v '^make' <<<"$out" || true)"
    [ "$rc" != 0 ] && [[ "$first" == "aimux-ops needs JDK 22 or newer (the Foreign Function & Memory API is final there); this is JDK "[0-9]*" at JAVA_HOME=$old. Set JAVA_HOME to a JDK 22+"* ]] \
      || { echo "$out"; echo "make install on $old: not the JDK check first"; exit 1; }
    echo "   make install on $old: ${first:0:120}…"
  else
    echo "   SKIPPED (not counted): no JDK older than 22 here to show the enforcer's message"
  fi
  rm -rf binding ;;
run)
  rm -rf app && mkdir -p app/src/main/java/app
  cp "$AIMUX_DIST_TESTS/java/pom.xml" app/
  cp "$AIMUX_DIST_TESTS/java/App.java" app/src/main/java/app/
  (cd app && mvnq package dependency:copy-dependencies)
  JAVA=("$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -cp "$PWD/app/target/app.jar:$PWD/app/target/dependency/*")
  bindings_expect_ok "Java, -Djava.library.path" \
    "$(bindings_run / "${JAVA[@]}" "-Djava.library.path=$AIMUX_DIST_PREFIX/lib" app.App "$AIMUX_DIST_RECORDING")"
  # the same program as a module (module app { requires dev.aimux; }) on the module path
  rm -rf modapp && mkdir -p modapp/src/app/app
  cp "$AIMUX_DIST_TESTS/java/App.java" modapp/src/app/app/
  printf 'module app {\n    requires dev.aimux;\n}\n' > modapp/src/app/module-info.java
  "$JAVA_HOME/bin/javac" -p app/target/dependency -d modapp/out modapp/src/app/module-info.java modapp/src/app/app/App.java
  bindings_expect_ok "Java, module path (java -p ... -m app/app.App)" \
    "$(bindings_run / "$JAVA_HOME/bin/java" --enable-native-access=dev.aimux -p "$PWD/modapp/out:$PWD/app/target/dependency" \
       "-Djava.library.path=$AIMUX_DIST_PREFIX/lib" -m app/app.App "$AIMUX_DIST_RECORDING" 2>&1)"
  rc=0; out="$(bindings_run / "${JAVA[@]}" app.App "$AIMUX_DIST_RECORDING")" || rc=$?
  [ "$rc" = 3 ] || { echo "$out"; echo "Java: exit $rc without a library"; exit 1; }
  bindings_expect_207 Java "$out" ;;
esac
