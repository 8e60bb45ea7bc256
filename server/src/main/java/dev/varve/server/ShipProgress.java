package dev.varve.server;

/** Progress of a backup: running totals after each applied frame. */
@FunctionalInterface
public interface ShipProgress {
    /** {@code entries} entries and {@code bytes} key and value bytes are in the new store so far. */
    void received(long entries, long bytes);
}
