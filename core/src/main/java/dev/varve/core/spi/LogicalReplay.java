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

    /** Applies one logical record found at {@code lsn}. */
    void apply(int type, ByteBuffer payload, long lsn);
}
