package dev.varve.engine;

/** A subscription made by {@link Varve#follow}: the snapshot it starts after. Close it to stop the calls. */
public interface ChangeFeed extends AutoCloseable {
    /** The snapshot declared when the feed started: the listener receives exactly the changes committed after it. */
    long snapshot();

    /** Stops the calls (a write already in its critical section may still deliver one). Idempotent. */
    @Override
    void close();
}
