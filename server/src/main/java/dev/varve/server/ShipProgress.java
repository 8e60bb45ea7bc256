package dev.varve.server;

/** Progress of a backup, called on its applier thread. */
@FunctionalInterface
public interface ShipProgress {
    /** {@code entries} entries and {@code bytes} key and value bytes are in the new store so far. */
    void received(long entries, long bytes);

    /** Follow mode: the image is verified and in place; the standby now applies the sender's changes. */
    default void imageComplete(BackupResult image) {
    }

    /** Follow mode: after each applied change frame, the writes applied so far and the latest sender snapshot held. */
    default void followed(long writesApplied, long latestSenderSnapshot) {
    }
}
