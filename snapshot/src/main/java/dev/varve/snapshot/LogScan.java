package dev.varve.snapshot;

import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.FileIO;
import dev.varve.core.io.StorageException;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;

/**
 * What an archive log of fixed-size records, each with its own CRC, holds — found at open by reading it, without
 * changing it: the valid records before the first bad one (CRC mismatch or partial record), and whether a valid
 * record follows a bad one.
 *
 * <p>Whether the records from the first bad one on may be cut as a torn tail is decided by recovery, once it knows
 * how many records the recovered checkpoint mark made durable ({@link #checkDurable}): a bad record inside that
 * part is corruption. Past it a crash may have left anything — records are written in order but a torn write need
 * not reach the disk in order — so there only a log whose durable count is not known is held to the stricter rule
 * that no valid record may follow a bad one, unless the bad records read as zeros: a power cut during the fsync of
 * several appended records can keep a later 512-byte sector of the write without an earlier one (which reads as the
 * zeros the file grew with), and since an fsync covers the whole file, no record from that gap on was ever forced,
 * so nothing relied on one.
 */
final class LogScan {
    private static final int CHUNK = 64 * 1024;

    /** Tells whether the record at {@code offset} of {@code chunk} is valid. */
    interface RecordCheck {
        boolean valid(ByteBuffer chunk, int offset);
    }

    private final Path file;
    private final long header;
    private final int record;
    /** Records before the first bad one. */
    final long valid;
    /** Byte offset of the first bad record (or of a partial record at the end), -1 when none. */
    final long badOffset;
    /** Byte offset of the first valid record after {@link #badOffset}, -1 when none. */
    final long validAfter;
    /** Whether every bad record before {@link #validAfter} reads as zeros: sectors a power cut lost. */
    private final boolean zerosBefore;

    private LogScan(Path file, long header, int record, long valid, long badOffset, long validAfter, boolean zerosBefore) {
        this.file = file;
        this.header = header;
        this.record = record;
        this.valid = valid;
        this.badOffset = badOffset;
        this.validAfter = validAfter;
        this.zerosBefore = zerosBefore;
    }

    /** Reads every record of {@code f} after its {@code header} bytes. */
    static LogScan of(FileIO f, long header, int record, RecordCheck check) {
        try {
            long size = f.size();
            long whole = Math.max(0, (size - header) / record);
            ByteBuffer chunk = ByteBuffer.allocate(CHUNK / record * record).order(ByteOrder.LITTLE_ENDIAN);
            long valid = -1;
            long validAfter = -1;
            boolean zeros = true;
            int perChunk = chunk.capacity() / record;
            for (long at = 0; at < whole && validAfter < 0; at += perChunk) {
                int n = (int) Math.min(perChunk, whole - at);
                chunk.clear().limit(n * record);
                if (f.read(chunk, header + at * record) < n * record) throw new CorruptionException("archive log shorter than its size", f.path(), header + at * record);
                for (int i = 0; i < n; i++) {
                    boolean ok = check.valid(chunk, i * record);
                    if (!ok) zeros &= isZero(chunk, i * record, record);
                    if (!ok && valid < 0) valid = at + i;
                    else if (ok && valid >= 0) {
                        validAfter = header + (at + i) * record;
                        break;
                    }
                }
            }
            if (valid >= 0) return new LogScan(f.path(), header, record, valid, header + valid * record, validAfter, zeros);
            long partial = header + whole * record;
            return new LogScan(f.path(), header, record, whole, size > partial ? partial : -1, -1, zeros);
        } catch (IOException e) {
            throw new StorageException("cannot read an archive log: " + e.getMessage(), f.path(), e);
        }
    }

    private static boolean isZero(ByteBuffer b, int from, int length) {
        for (int i = from; i < from + length; i++) if (b.get(i) != 0) return false;
        return true;
    }

    /** True when the file holds bytes after its valid records (a torn tail, or damage). */
    boolean hasTail() {
        return badOffset >= 0;
    }

    /**
     * Throws a {@link CorruptionException} naming the file and offset unless everything after the first
     * {@code durable} records may be a torn tail: they must all be valid, and when {@code durable} is not known
     * (-1) no valid record may follow a bad one that does not read as zeros.
     */
    void checkDurable(long durable) {
        if (durable > valid) {
            if (badOffset >= 0)
                // worded so that the " at offset N" the exception appends follows the damaged record it locates
                throw new CorruptionException("archive log: the recovered checkpoint mark made " + durable + " records durable, but record "
                        + valid + " is damaged", file, badOffset);
            throw new CorruptionException("archive log holds " + valid + " records but the recovered checkpoint mark made " + durable
                    + " durable (the file was cut short)", file, header + valid * record);
        }
        if (durable < 0 && validAfter >= 0 && !zerosBefore)
            // not "... follows at offset A" + " at offset B": the exception appends the damaged record's offset, which read as a second one
            throw new CorruptionException("archive log holds valid record " + (validAfter - header) / record + " (offset " + validAfter
                    + ") after damaged record " + valid, file, badOffset);
    }
}
