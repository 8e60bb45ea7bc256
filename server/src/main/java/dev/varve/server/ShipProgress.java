package dev.varve.server;

/** Progress of a backup, called on its applier thread. */
@FunctionalInterface
public interface ShipProgress {
    /** {@code pages} of the image's {@code imagePages} pages ({@code bytes} bytes) are in the new store's files so far. */
    void received(long pages, long imagePages, long bytes);

    /** Follow mode: the image is verified and in place; the standby now applies the sender's changes. */
    default void imageComplete(BackupResult image) {
    }

    /** Follow mode: after each applied change frame, the writes applied so far and the latest sender snapshot held. */
    default void followed(long writesApplied, long latestSenderSnapshot) {
    }
}
