package dev.aimux.types;

import com.fasterxml.jackson.databind.JsonNode;

import java.util.Optional;

/**
 * One field of a typed object as the JSON has it: absent ({@link #isMissing()}), JSON null
 * ({@link #isNull()}), a value of its type ({@link #value()}), or a value of another JSON type
 * ({@link #isInvalid()}, readable as {@link #raw()}). The {@code _field()} accessors of the
 * generated types return one; the plain accessors read its value.
 */
public final class JsonField<T> {
    private final JsonNode raw;
    private final T value;

    private JsonField(JsonNode raw, T value) {
        this.raw = raw;
        this.value = value;
    }

    /** The field of {@code object} named {@code name}, read with {@code codec}. */
    static <T> JsonField<T> read(JsonNode object, String name, Codec<T> codec, String what) {
        JsonNode raw = object.get(name);
        if (raw == null || raw.isNull()) {
            return new JsonField<>(raw, null);
        }
        try {
            return new JsonField<>(raw.deepCopy(), codec.decode(raw, what));
        } catch (InvalidDataException e) {
            return new JsonField<>(raw.deepCopy(), null);
        }
    }

    /** Absent from the JSON object. */
    public boolean isMissing() {
        return raw == null;
    }

    /** Present as JSON null. */
    public boolean isNull() {
        return raw != null && raw.isNull();
    }

    /** Present with a value this build cannot read as its type. */
    public boolean isInvalid() {
        return raw != null && !raw.isNull() && value == null;
    }

    /** The value, when present and of its type. */
    public Optional<T> value() {
        return Optional.ofNullable(value);
    }

    /** The JSON as it came (JSON null included), when present. */
    public Optional<JsonNode> raw() {
        return Optional.ofNullable(raw).map(JsonNode::deepCopy);
    }

    @Override
    public String toString() {
        return raw == null ? "JsonField.missing" : "JsonField(" + raw + ")";
    }
}
