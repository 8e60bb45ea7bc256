package dev.varve.core.wal;

import java.nio.ByteBuffer;

/**
 * Sees each record an open's scan validates ({@link WalOpenScan#run(dev.varve.core.io.FileIOFactory, java.nio.file.Path,
 * long, dev.varve.config.WalSyncMode, long, boolean, WalRecordVisitor)}), in LSN order, before anything is written:
 * what the open must learn of the records recovery will replay, read once with the scan instead of again.
 */
@FunctionalInterface
public interface WalRecordVisitor {
    /**
     * The valid record at {@code lsn}, of {@code type} (segment seals included); {@code payload} is little-endian,
     * read-only, and valid during the call only. It is a view of the whole segment with its position and limit around the
     * payload (a view per record was most of a large scan's allocation): read it from its position, never from 0. What
     * the visitor does to its position, limit or order is undone for the next record.
     */
    void visit(long lsn, int type, ByteBuffer payload);
}
