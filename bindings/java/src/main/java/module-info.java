/**
 * The aimux-ops Java binding as a named module: on the module path it brings Jackson with it (no
 * {@code --add-modules}); on JDK 22+ its native calls (FFM) want {@code --enable-native-access=dev.aimux}
 * (without it a warning), on JDK 17-21 they go through JNA (the module {@code com.sun.jna}).
 */
module dev.aimux {
    // DecodeChain.answer returns a Jackson ObjectNode: a reader of this module reads Jackson too
    requires transitive com.fasterxml.jackson.databind;
    // the backend before JDK 22 (JnaNative); its automatic module name
    requires com.sun.jna;

    exports dev.aimux;
    exports dev.aimux.errors;
    exports dev.aimux.types;
}
