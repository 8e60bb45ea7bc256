package dev.varve.engine;

/** A change (write, table creation, snapshot, rank, checkpoint) was asked of a store opened with {@link Varve#openReadOnly}. */
public class ReadOnlyStoreException extends UnsupportedOperationException {
    private static final long serialVersionUID = 1L;

    /** A refused change, with the message naming the store. */
    public ReadOnlyStoreException(String message) {
        super(message);
    }
}
