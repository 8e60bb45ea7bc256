package dev.varve.checkpoint;

import java.nio.ByteBuffer;

/**
 * The payloads of WAL records by LSN, as replay of a {@code PAGE_REBUILD}'s LOGGED ops needs them: the bytes an op
 * names are in the logical record its change applied (see {@link PageRebuild}).
 */
@FunctionalInterface
public interface LoggedRecords {
    /**
     * The payload of the record at {@code lsn}, its bytes from index 0 to its limit.
     *
     * @throws IllegalStateException if the WAL has no record there
     */
    ByteBuffer payload(long lsn);
}
