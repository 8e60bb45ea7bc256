package dev.varve.core.store;

/**
 * The header at the start of every partition page file. It occupies the first {@code pageSize} bytes so that page
 * {@code i} sits at {@code (i + 1) * pageSize}, aligned.
 *
 * <pre>
 *  0        8         12         16        20        24
 * +--------+---------+----------+---------+---------+
 * | magic  | version | pageSize | fileId  | crc32c  |   (crc over bytes [0, 20))
 * +--------+---------+----------+---------+---------+
 * </pre>
 * Format versions: 1 — initial layout.
 */
final class PartitionFileHeader {
    static final long MAGIC = 0x5641525645504731L; // "VARVEPG1"
    static final int VERSION = 1;
    static final int MAGIC_OFFSET = 0;
    static final int VERSION_OFFSET = 8;
    static final int PAGE_SIZE_OFFSET = 12;
    static final int FILE_ID_OFFSET = 16;
    static final int CRC_OFFSET = 20;
    static final int LENGTH = 24;

    private PartitionFileHeader() {
    }
}
