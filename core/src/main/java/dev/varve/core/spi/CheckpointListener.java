package dev.varve.core.spi;

/**
 * Callbacks of the checkpoint protocol for other layers. The snapshot layer makes its archive durable in
 * {@link #beforeStartMarker} (write-ahead snapshot, I4) — before any page of the checkpoint reaches the store.
 */
public interface CheckpointListener {
    /** Step 1, under the checkpoint write lock (no write in flight): the mark is taken. */
    default void onMark(long checkpointId, long markLsn) {
    }

    /** Step 4: after recovery data is durable, before the start marker. */
    default void beforeStartMarker(long checkpointId, long markLsn) {
    }

    /**
     * The store's id {@code storeId} is durable in a checkpoint marker (the first start marker's write, or at open the
     * markers already held it): files the listener creates from now on may record it.
     */
    default void storeIdDurable(long storeId) {
    }

    /** After the end marker: the store is at {@code markLsn}. */
    default void afterEndMarker(long checkpointId, long markLsn) {
    }

    /**
     * A checkpoint found nothing written since the last complete one, {@code checkpointId} at {@code markLsn}, and
     * wrote nothing: the store is still at that mark (work that waits for end markers may run against it again).
     */
    default void whileIdle(long checkpointId, long markLsn) {
    }
}
