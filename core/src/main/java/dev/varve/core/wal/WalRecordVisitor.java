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
     * read-only, and valid during the call only.
     */
    void visit(long lsn, int type, ByteBuffer payload);
}
