package dev.varve.core.store;

/**
 * The header at the start of every partition page file. It occupies the first {@code pageSize} bytes so that page
 * {@code i} sits at {@code (i + 1) * pageSize}, aligned.
 *
 * <pre>
 *  0        8         12         16        20         28        32
 * +--------+---------+----------+---------+----------+---------+
 * | magic  | version | pageSize | fileId  | storeId  | crc32c  |   (version 2; crc over bytes [0, 28))
 * +--------+---------+----------+---------+----------+---------+
 * | magic  | version | pageSize | fileId  | crc32c   |             (version 1; crc over bytes [0, 20))
 *
 * at 256 and at 512, two generation slots, each:
 * +----------+------------+---------------------------------------+
 * | storeId  | generation | crc32c over fileId, storeId, generation |
 * +----------+------------+---------------------------------------+
 *  0          8            16                                      20
 * </pre>
 * The store id is written once, when the file is created, and never rewritten (0: the store's id was not yet durable
 * in a checkpoint marker, and the slots say it). The generation is the id of the last checkpoint whose page writes
 * reached the file: a checkpoint writes it, before the file's fsync, into the slot that does not hold the file's
 * current generation, so a write torn by a power cut leaves the current one whole. The slots lie in the first and
 * second 512 bytes of the header page (the smallest page is 1 KiB). A version 1 file gains the slots the first time
 * a checkpoint writes it; its fixed header stays as it is.
 *
 * <p>Format versions: 1 — initial layout; 2 — the store id in the fixed header, the generation slots.
 */
final class PartitionFileHeader {
    static final long MAGIC = 0x5641525645504731L; // "VARVEPG1"
    static final int VERSION = 2;
    static final int MAGIC_OFFSET = 0;
    static final int VERSION_OFFSET = 8;
    static final int PAGE_SIZE_OFFSET = 12;
    static final int FILE_ID_OFFSET = 16;
    static final int STORE_ID_OFFSET = 20;
    /** Where the header's CRC sits: version 1 had no store id. */
    static final int CRC_OFFSET_V1 = 20;
    static final int CRC_OFFSET = 28;
    /** Bytes of the longest fixed header. */
    static final int LENGTH = 32;
    static final int[] SLOT_OFFSETS = {256, 512};
    static final int SLOT_LENGTH = 20;
    /** Bytes of the header page read at open: the fixed header and both slots. */
    static final int READ_LENGTH = 512 + SLOT_LENGTH;

    static int crcOffset(int version) {
        return version == 1 ? CRC_OFFSET_V1 : CRC_OFFSET;
    }

    private PartitionFileHeader() {
    }
}
