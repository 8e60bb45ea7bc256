package dev.varve.core.wal;

import java.nio.file.Path;

/**
 * What {@link Wal#open} cut off a torn or corrupt WAL tail: from {@code offset} of {@code file} (the LSN
 * {@code lsn}) to the end of that segment was zeroed, and {@code segmentsDeleted} later segment files were deleted.
 *
 * @param file            the segment where the last good record ends
 * @param offset          byte offset in {@code file} where the cut starts
 * @param lsn             the LSN of the cut, which is where appending continues
 * @param reason          what was wrong with the first record (or segment) that was dropped
 * @param segmentsDeleted how many later segment files were deleted
 */
public record WalTailCut(Path file, long offset, long lsn, String reason, int segmentsDeleted) {
    @Override
    public String toString() {
        return "WAL tail cut in " + file + " at offset " + offset + " (LSN " + lsn + "): " + reason
                + "; " + segmentsDeleted + " later segment(s) deleted";
    }
}
