package dev.varve.core.wal;

import static dev.varve.core.wal.WalSegmentDescriptor.RECORD_HEADER_SIZE;
import static dev.varve.core.wal.WalSegmentDescriptor.SEAL_BYTES;

import dev.varve.config.WalSyncMode;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.StorageException;
import java.io.IOException;
import java.nio.file.Path;

/**
 * Starts the next WAL segment at a writable open, before the first record, when appending cannot go on in the newest:
 * <ul>
 *   <li>it was written under another walSyncMode than the open's, or is of format version 1, which records none. Every
 *       record of a segment is written under the one mode its header records, the mode its tail is judged by
 *       ({@link WalOpenScan}), so the segment is sealed and appending moves on;</li>
 *   <li>it is full: it ends in its seal, whose successor a truncating open dropped as damaged (or the scan started
 *       past it). The seal names that successor, which is made now: without it, the seal would have the next open refuse
 *       the WAL as one whose newest segment is missing, and the first append would write a second seal past the end.</li>
 * </ul>
 *
 * <p>Design note: the seal goes to disk in two steps, its body (length zero) forced before its length. The segment's
 * tail is judged by its own mode: under LOG_ONLY or BACKGROUND a record with its length and a bad body at the end is
 * damage, and a power cut while one force carried both could leave just that, though nothing was acknowledged yet
 * (an FSYNC open switching from a LOG_ONLY segment promises to survive it). Forced apart, the cut leaves a seal
 * without its length, a torn tail; the successor keeps its temporary name until the seal is durable, as at any switch.
 */
final class WalOpenSwitch {
    private WalOpenSwitch() {
    }

    /**
     * Whether appending under {@code mode} may not continue in {@code last} at {@code endOffset}; with
     * {@code anyMode} (an open whose appends never reach the files) only when it is full.
     */
    static boolean needed(WalSegment last, int endOffset, WalSyncMode mode, boolean anyMode) {
        return full(last, endOffset) || !anyMode && WalSegmentDescriptor.writtenUnder(last.buffer) != mode;
    }

    private static boolean full(WalSegment last, int endOffset) {
        return endOffset + SEAL_BYTES > last.buffer.capacity();
    }

    /**
     * Seals {@code last} (mapped, records ending at {@code at}) unless it is full, and returns its successor, created
     * for {@code mode} and the store whose durable id is {@code storeId} (or 0), named and mapped (forced through a durable
     * copy with {@code withCopy}); {@code last} is closed. A crash at any point leaves a WAL that opens: records
     * forced first, the successor prepared under its temporary name before the seal names it, named once the seal is
     * durable.
     */
    static WalSegment startNext(FileIOFactory io, Path dir, WalSegment last, int at, WalSyncMode mode, long storeId, boolean withCopy) {
        long size = last.buffer.capacity();
        long next = last.index + 1;
        boolean seal = !full(last, at);
        if (seal) last.force(0, at); // what a crashed process left in the page cache: durable before a successor has a name
        WalSegment.prepareFile(io, dir, next, size, mode, storeId, withCopy);
        if (seal) {
            try {
                WalSegmentDescriptor.putBody(last.buffer, at, WalSegmentDescriptor.lsn(last.index, at, size),
                        WalSegmentDescriptor.SEAL_TYPE, WalSegmentDescriptor.sealPayload(next), Long.BYTES);
                last.force(at, at + SEAL_BYTES);
                WalSegmentDescriptor.putLengthRelease(last.buffer, at, RECORD_HEADER_SIZE + Long.BYTES);
                last.force(at, at + SEAL_BYTES);
            } catch (InternalError e) { // a fault on the mapped store (the device failed) is an IO error
                throw new StorageException("cannot seal WAL segment " + last.index + " at offset " + at, last.path, new IOException(e));
            }
        }
        last.installCopy(io, dir, seal ? at + SEAL_BYTES : at); // its records and seal durable under its name
        WalSegment successor = WalSegment.install(io, dir, next, size, withCopy);
        last.retire();
        return successor;
    }
}
