package dev.varve.engine;

/** {@link Varve#asOf} of a snapshot id that was never declared or has been dropped by the retention policy. */
public class SnapshotNotFoundException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** A snapshot id that cannot be read, and why. */
    public SnapshotNotFoundException(String message) {
        super(message);
    }
}
