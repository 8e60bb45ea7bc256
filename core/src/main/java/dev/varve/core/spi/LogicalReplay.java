package dev.varve.core.spi;

import java.nio.ByteBuffer;

/**
 * Applies logical WAL records during recovery, with the same code that applied them the first time (the engine
 * implements it), so replay reproduces the original page images (I6).
 */
public interface LogicalReplay {
    /**
     * Called once before the first record: the page store sits at the last complete checkpoint's mark
     * {@code markLsn}, or is empty ({@code emptyStore}: no checkpoint ever completed, so the catalog must be
     * formatted first, and replay starts at the beginning of the WAL).
     */
    void beforeReplay(boolean emptyStore, long markLsn);

    /**
     * Applies one logical record found at {@code lsn}, or queues it: its page changes may still be in progress when
     * this returns (the engine replays partitions in parallel), until {@link #drain}. Recovery reserved
     * {@code reservedPages} of head-room in the page memory for it; the replayer returns them
     * ({@code PageMemory#releaseHeadroom}) once the record is applied, so the head-room of records still queued stays
     * reserved while that of applied ones comes back at once.
     */
    void apply(int type, ByteBuffer payload, long lsn, int reservedPages);

    /**
     * The operations in a record, for the head-room its replay reserves (the estimate its live write reserved takes
     * the same count). By default an upper bound from the size: {@code 1 + bytes / 9}, the smallest an operation can
     * be; a replayer that knows the record format reads the count.
     */
    default int operations(int type, ByteBuffer payload) {
        return 1 + payload.remaining() / 9;
    }

    /**
     * The most pages a record may dirty beyond that estimate: the overflow chains of the values it removes or
     * replaces, which its live write read from the leaves and reserved too. Replay cannot read them before the
     * records ahead of it are applied, so it reserves the bound. By default none.
     */
    default long freedPagesBound(int type, ByteBuffer payload) {
        return 0;
    }

    /** Waits until every record passed to {@link #apply} is applied; recovery calls it before each checkpoint. */
    default void drain() {
    }

    /**
     * Waits until at least one record queued by {@link #apply} has been applied and has returned its head-room; false
     * at once when none is queued (every record passed is applied). Recovery calls it when the region has no room for
     * the next record: only when nothing is queued does it take a checkpoint. By default nothing is ever queued.
     */
    default boolean awaitApplied() {
        return false;
    }

    /** After the last record (drained) or a failure: stops whatever threads replay started. */
    default void endReplay() {
    }
}
