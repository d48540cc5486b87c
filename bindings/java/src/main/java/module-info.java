/**
 * The aimux-ops Java binding as a named module: on the module path it brings Jackson with it (no
 * {@code --add-modules}); its native calls need {@code --enable-native-access=dev.aimux}.
 */
module dev.aimux {
    // DecodeChain.answer returns a Jackson ObjectNode: a reader of this module reads Jackson too
    requires transitive com.fasterxml.jackson.databind;

    exports dev.aimux;
    exports dev.aimux.errors;
    exports dev.aimux.types;
}
