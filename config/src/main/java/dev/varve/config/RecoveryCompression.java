package dev.varve.config;

/**
 * How page images written for crash recovery (WAL physical records or recovery-file entries) are
 * compressed. Compression never weakens durability; it trades CPU for recovery-data bytes.
 */
public enum RecoveryCompression {
    /** Page images are written in full. */
    DISABLED,
    /** The unused gap in the middle of a page is skipped; the rest is written as is. */
    SKIP_GARBAGE,
    /** The unused gap is skipped and the rest is compressed with Snappy. */
    SNAPPY
}
