package dev.varve.core.wal;

import static dev.varve.core.wal.WalSegmentDescriptor.RECORD_HEADER_SIZE;
import static dev.varve.core.wal.WalSegmentDescriptor.SEAL_BYTES;

import dev.varve.config.WalSyncMode;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.StorageException;
import java.io.IOException;
import java.nio.file.Path;

/**
 * Keeps every record of a WAL segment written under the one walSyncMode its header records, the mode its tail is
 * judged by ({@link WalOpenScan}): a writable open under another mode than the newest segment's — or of a version 1
 * segment, which records none — does not append to that segment but seals it and starts the next one, before the
 * first record.
 *
 * <p>Design note: the seal goes to disk in two steps, its body (length zero) forced before its length. The segment's
 * tail is judged by its own mode: under LOG_ONLY or BACKGROUND a record with its length and a bad body at the end is
 * damage, and a power cut while one force carried both could leave just that, though nothing was acknowledged yet
 * (an FSYNC open switching from a LOG_ONLY segment promises to survive it). Forced apart, the cut leaves a seal
 * without its length, a torn tail; the successor keeps its temporary name until the seal is durable, as at any switch.
 */
final class WalModeSwitch {
    private WalModeSwitch() {
    }

    /**
     * Whether appending under {@code mode} may not continue in {@code last} at {@code endOffset}: the segment was
     * written under another mode or does not say. A segment with no room for a seal is full: the first append starts
     * the next segment, under {@code mode}, anyway.
     */
    static boolean needed(WalSegment last, int endOffset, WalSyncMode mode) {
        return WalSegmentDescriptor.writtenUnder(last.buffer) != mode && endOffset + SEAL_BYTES <= last.buffer.capacity();
    }

    /**
     * Seals {@code last} (mapped, records ending at {@code at}) and returns its successor, created for {@code mode},
     * named and mapped; {@code last} is closed. A crash at any point leaves a WAL that opens: records forced first, the
     * successor prepared under its temporary name before the seal names it, named once the seal is durable.
     */
    static WalSegment sealAndStartNext(FileIOFactory io, Path dir, WalSegment last, int at, WalSyncMode mode) {
        long size = last.buffer.capacity();
        long next = last.index + 1;
        last.force(0, at); // what a crashed process left in the page cache: durable before a successor has a name
        WalSegment.prepareFile(io, dir, next, size, mode);
        try {
            WalSegmentDescriptor.putBody(last.buffer, at, WalSegmentDescriptor.lsn(last.index, at, size),
                    WalSegmentDescriptor.SEAL_TYPE, WalSegmentDescriptor.sealPayload(next), Long.BYTES);
            last.force(at, at + SEAL_BYTES);
            WalSegmentDescriptor.putLengthRelease(last.buffer, at, RECORD_HEADER_SIZE + Long.BYTES);
            last.force(at, at + SEAL_BYTES);
        } catch (InternalError e) { // a fault on the mapped store (the device failed) is an IO error
            throw new StorageException("cannot seal WAL segment " + last.index + " at offset " + at, last.path, new IOException(e));
        }
        WalSegment successor = WalSegment.install(io, dir, next, size);
        WalSegment.closeQuietly(last);
        return successor;
    }
}
