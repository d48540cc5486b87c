package dev.aimux.types;

/**
 * A string the provider or the core may add values to (finish reasons, roles, providers): the
 * generated subclass names the known values as constants, and {@code of(String)} takes any other
 * as it is (never a closed enum: a new value reads and round-trips).
 */
public abstract class StringValue {
    private final String value;

    protected StringValue(String value) {
        this.value = java.util.Objects.requireNonNull(value, "value");
    }

    /** The wire value. */
    public final String value() {
        return value;
    }

    /** True for a value this build names as a constant. */
    public abstract boolean isKnown();

    @Override
    public final boolean equals(Object o) {
        return o != null && o.getClass() == getClass() && ((StringValue) o).value.equals(value);
    }

    @Override
    public final int hashCode() {
        return value.hashCode();
    }

    @Override
    public final String toString() {
        return value;
    }
}
