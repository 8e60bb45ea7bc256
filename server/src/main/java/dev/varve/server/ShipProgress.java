package dev.varve.server;

import dev.varve.config.VarveConfig;

/** Progress of a backup, called on its applier thread. */
@FunctionalInterface
public interface ShipProgress {
    /** {@code pages} of the image's {@code imagePages} pages ({@code bytes} bytes) are in the new store's files so far. */
    void received(long pages, long imagePages, long bytes);

    /** Follow mode: the image is verified and in place; the standby now applies the sender's changes. */
    default void imageComplete(BackupResult image) {
    }

    /**
     * Follow mode: {@link #imageComplete(BackupResult)}, with the configuration the standby is open with. Its data
     * region and WAL segments are at least the sender's, and its WAL keeps that segment size: an operator opens the
     * standby with these sizes, which a listener can show (the default hands the image on alone).
     */
    default void imageComplete(BackupResult image, VarveConfig standby) {
        imageComplete(image);
    }

    /** Follow mode: after each applied change frame, the writes applied so far and the latest sender snapshot held. */
    default void followed(long writesApplied, long latestSenderSnapshot) {
    }
}
