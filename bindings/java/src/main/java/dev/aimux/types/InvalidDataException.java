package dev.aimux.types;

/**
 * A typed accessor met JSON it cannot read as its type: a required field absent, or a value of
 * another JSON type (the raw value stays readable through the {@code _field()} accessor and
 * {@link JsonObject#_json()}).
 */
public final class InvalidDataException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public InvalidDataException(String message) {
        super(message);
    }
}
